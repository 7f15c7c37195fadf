/* none.c -- the device API of kernels.h in a build without CUDA (configure without
 * --with-cuda): there is no GPU backend; opening a device fails with a message that says so,
 * allocations fail, and the rest does nothing. Compiled instead of the .cu files. */
#include "config.h"
#include "kernels/kernels.h"

#include <stddef.h>

static const char no_cuda[] = "this pdlang was built without CUDA (configure --with-cuda)";

/* The calling thread's last failure in this layer: every call below that fails sets it. */
static _Thread_local const char *last_error = "";

static pd_status fail(pd_status st) {
  last_error = no_cuda;
  return st;
}

bool pd_k_cuda_built(void) { return false; }

pd_status pd_k_cuda_open(int device, pd_error *err) {
  PD_UNUSED(device);
  fail(PD_EUNSUPPORTED);
  return pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0}, "%s", no_cuda);
}

bool pd_k_cuda_is_open(void) { return false; }

const char *pd_k_cuda_device_name(void) { return ""; }

const pd_k_backend *pd_k_cuda(void) { return NULL; }

void *pd_k_dev_alloc(size_t nbytes) {
  PD_UNUSED(nbytes);
  fail(PD_ENOMEM);
  return NULL;
}

/* Nothing was ever allocated: only NULL can come here. */
void pd_k_dev_free(void *p) { PD_UNUSED(p); }

void pd_k_dev_trim(void) {}

size_t pd_k_dev_cached(void) { return 0; }

size_t pd_k_dev_live(void) { return 0; }

pd_status pd_k_dev_upload(void *dev, const void *host, size_t nbytes) {
  PD_UNUSED(dev);
  PD_UNUSED(host);
  PD_UNUSED(nbytes);
  return fail(PD_EUNSUPPORTED);
}

pd_status pd_k_dev_download(void *host, const void *dev, size_t nbytes) {
  PD_UNUSED(host);
  PD_UNUSED(dev);
  PD_UNUSED(nbytes);
  return fail(PD_EUNSUPPORTED);
}

pd_status pd_k_dev_copy(void *dst, const void *src, size_t nbytes) {
  PD_UNUSED(dst);
  PD_UNUSED(src);
  PD_UNUSED(nbytes);
  return fail(PD_EUNSUPPORTED);
}

pd_status pd_k_dev_sync(void) { return fail(PD_EUNSUPPORTED); }

const char *pd_k_cuda_error(void) { return last_error; }
