# bench_device.sh -- sourced by bench_gated.sh and bench_attention.sh: PDLANG_BENCH_DEVICE=gpu
# (or gpu:N) runs both sides of the comparison on that GPU. Sets `device` (pdlang's --device)
# and `tdevice` (PyTorch's device).
device=${PDLANG_BENCH_DEVICE:-cpu}
case $device in
  cpu) tdevice=cpu ;;
  gpu) tdevice=cuda ;;
  gpu:*) tdevice=cuda:${device#gpu:} ;;
  *) echo "PDLANG_BENCH_DEVICE: '$device' is not cpu, gpu or gpu:N"; exit 2 ;;
esac
