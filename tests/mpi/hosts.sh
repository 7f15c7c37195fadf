#!/bin/sh
# hosts.sh -- data parallelism across hosts: two network namespaces made here (`ip netns`, a veth
# pair between them with an address at each end, loopback up) stand for two machines; mpirun
# starts in the first and launches the second's daemon through tests/mpi/netns_agent.sh (the
# launcher agent that enters the namespace, in place of ssh), with Open MPI's TCP transports
# kept to the veth's subnet (shared memory off), so that every byte between the ranks crosses
# the veth. 2 ranks of batch b on the two "hosts" end with the parameters of 1 process of batch
# 2b (tests/mpi/ckpt_close, 1e-5), and the veth's counters show the gradients went through it.
# Skips, saying why, where namespaces cannot be made (not root, no ip, no CAP_NET_ADMIN).
# The namespaces (and whatever still runs in them) are removed on every exit; the job is
# stopped after 300 s if it hangs. TAP output.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi hosts.sh
skip() {
  echo "1..0 # SKIP hosts.sh: $1"
  exit 0
}
command -v ip > /dev/null 2>&1 || skip "no 'ip' command (the Debian package iproute2)"
command -v unshare > /dev/null 2>&1 || skip "no 'unshare' command (util-linux)"
[ "$(id -u)" = 0 ] || skip "not root: making network namespaces needs CAP_NET_ADMIN"
A=pd_mpi_a.$$
B=pd_mpi_b.$$
cleanup() {
  for ns in "$A" "$B"; do
    pids=$(ip netns pids "$ns" 2> /dev/null)
    [ -n "$pids" ] && kill -9 $pids 2> /dev/null
    ip netns del "$ns" 2> /dev/null
  done
  cd / && rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$A" 2> ns.err || skip "cannot create a network namespace: $(cat ns.err)"
ip netns add "$B" 2> ns.err || skip "cannot create a network namespace: $(cat ns.err)"
# The veth pair, one end in each namespace (made there: no name in the host's namespace).
net=10.47.$(($$ % 200 + 20))
if ! ip link add pdveth0 netns "$A" type veth peer name pdveth1 netns "$B" 2> ns.err ||
   ! ip -n "$A" addr add "$net.1/24" dev pdveth0 || ! ip -n "$B" addr add "$net.2/24" dev pdveth1 ||
   ! ip -n "$A" link set pdveth0 up || ! ip -n "$B" link set pdveth1 up ||
   ! ip -n "$A" link set lo up || ! ip -n "$B" link set lo up; then
  skip "cannot make a veth pair between two namespaces: $(cat ns.err)"
fi
echo "1..2"
printf '%s %s %s\n' "$net.1" "$A" pdhost-a "$net.2" "$B" pdhost-b > hosts.map
export PD_NETNS_MAP="$dir/hosts.map"
# Sanitizer builds: the options of the harness reach the ranks on both hosts.
fwd="-x ASAN_OPTIONS -x UBSAN_OPTIONS"
make_data
model mlp 16 true one.ckpt > one.pd
model mlp 8 true two.ckpt > two.pd
"$PDLANG" run --progress=none one.pd > one.out 2> one.err
r1=$?
before=$(ip netns exec "$B" cat /sys/class/net/pdveth1/statistics/rx_bytes)
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ip netns exec "$A" timeout 300 "$MPIRUN" \
  --allow-run-as-root --oversubscribe --bind-to none --host "$net.1:1,$net.2:1" -np 2 \
  --mca plm_rsh_agent "$top_srcdir/tests/mpi/netns_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl self,tcp --mca btl_tcp_if_include "$net.0/24" \
  --mca oob_tcp_if_include "$net.0/24" -x PD_NETNS_MAP $fwd \
  "$PDLANG" run --progress=lines two.pd > two.out 2> two.err
r2=$?
after=$(ip netns exec "$B" cat /sys/class/net/pdveth1/statistics/rx_bytes)
if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && "$CLOSE" one.ckpt two.ckpt 1e-5 > close.out; then
  echo "ok 1 - mlp across two network namespaces: 2 ranks of batch 8 = 1 process of batch 16 ($(cat close.out))"
else
  echo "not ok 1 - mlp across two network namespaces (exits $r1, $r2)"
  cat one.err two.err close.out 2> /dev/null | sed 's/^/# /'
fi
# The traffic: 3 epochs of 6 steps, each step's sum moves the gradients (4 x 16 + 16 + 16 x 2
# + 2 floats: 456 bytes) into the second host at least once (a ring's reduce and gather).
got=$((after - before))
want=$((3 * 6 * 456))
if [ "$got" -ge "$want" ] && grep -q ', 2 processes)' two.err; then
  echo "ok 2 - the sums crossed the veth: $got bytes into the second namespace (>= $want)"
else
  echo "not ok 2 - $got bytes into the second namespace, fewer than the $want of the gradients"
  sed 's/^/# /' two.err
fi
