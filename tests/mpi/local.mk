# tests/mpi/local.mk -- data-parallel training on MPI: tests/mpi/*.sh run jobs of 2 ranks
# through the configured mpirun (as root and on few cores: the harness adds
# --allow-run-as-root and --oversubscribe, tests/mpi/lib.sh), and skip in a build without MPI.
# tests/mpi/ckpt_close compares the checkpoints two runs leave; inplace.sh runs
# tests/mpi/inplace_check, the sums made in a var's own storage. The program transformation
# (dump.sh) is tested in every build: it needs no MPI. hosts.sh runs a job across two network
# namespaces that it makes (as root; it skips, saying why, where it cannot), launched there by
# tests/mpi/netns_agent.sh in place of ssh. gpu.sh: GPU ranks through NCCL (2 GPUs), or their
# refusal in a build without NCCL. ckpt_durability.sh: the checkpoint of a 2-rank job after
# kill -9 of its ranks (it resumes to the whole run's) and on a full disk (a tmpfs, as root).
check_PROGRAMS += tests/mpi/ckpt_close tests/mpi/inplace_check
TESTS += tests/mpi/dump.sh tests/mpi/equiv.sh tests/mpi/faults.sh tests/mpi/hosts.sh tests/mpi/gpu.sh \
	tests/mpi/sync_bn.sh tests/mpi/inplace.sh tests/mpi/threads.sh tests/mpi/ckpt_durability.sh
EXTRA_DIST += tests/mpi/lib.sh tests/mpi/dump.sh tests/mpi/equiv.sh tests/mpi/faults.sh \
	tests/mpi/hosts.sh tests/mpi/netns_agent.sh tests/mpi/gpu.sh tests/mpi/inplace.sh \
	tests/mpi/sync_bn.sh tests/mpi/threads.sh tests/mpi/ckpt_durability.sh
AM_TESTS_ENVIRONMENT += MPIRUN='$(MPIRUN)'; export MPIRUN;
if PD_HAVE_NCCL
AM_TESTS_ENVIRONMENT += PD_HAVE_NCCL=1; export PD_HAVE_NCCL;
endif
