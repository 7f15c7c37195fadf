#!/bin/sh
# netns_agent.sh -- the launcher agent of tests/mpi/hosts.sh, which Open MPI runs instead of ssh
# (--mca plm_rsh_agent): `netns_agent.sh HOST COMMAND...` runs COMMAND, as the remote shell of
# ssh would, inside the network namespace whose veth has address HOST, under a hostname of its
# own (its UTS namespace), so that Open MPI's daemon there is another host. The map of addresses
# to namespaces is the file $PD_NETNS_MAP ("ADDRESS NAMESPACE HOSTNAME" lines).
host=$1
shift
: "${PD_NETNS_MAP:?netns_agent.sh: PD_NETNS_MAP must name the map of hosts to namespaces}"
line=$(awk -v h="$host" '$1 == h { print $2, $3; exit }' "$PD_NETNS_MAP")
if [ -z "$line" ]; then
  echo "netns_agent.sh: no namespace for host '$host' in $PD_NETNS_MAP" >&2
  exit 255
fi
ns=${line% *}
name=${line#* }
# As ssh does: the remote shell reads the command line.
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$1" && shift && exec /bin/sh -c "$*"' \
  netns_agent "$name" "$@"
