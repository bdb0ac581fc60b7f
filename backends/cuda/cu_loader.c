/* The CUDA backend's libraries, loaded at run time: libcudart first, and
 * libcudnn and libcublas only where the runtime finds a device; their
 * function tables, and the errors their calls report. */
#include "cu_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef PDNN_CUDA_LIBDIR
#define PDNN_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

pdnn__cu_rt_fns pdnn__cu_rt;
pdnn__cu_dnn_fns pdnn__cu_dnn;
pdnn__cu_blas_fns pdnn__cu_blas;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ok;                   /* set once by load_libraries        */
static char load_why[512];            /* why not, when !load_ok            */
static char versions[96];             /* "CUDA driver X.Y / runtime ..."   */

/* dlopen's first success among names, each tried as a plain soname and
 * then in the directory the build found CUDA in. */
static void *open_first(const char *const *names, size_t n, const char *what)
{
    char path[512];
    const char *err = "";
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        (void)dlerror(); /* the error for the path below says more */
        snprintf(path, sizeof path, "%s/%s", PDNN_CUDA_LIBDIR, names[i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        err = dlerror();
    }
    snprintf(load_why, sizeof load_why, "%s not found (tried %s%s%s%s%s, also in %s)%s%s", what, names[0],
             n > 1 ? ", " : "", n > 1 ? names[1] : "", n > 2 ? ", " : "", n > 2 ? names[2] : "",
             PDNN_CUDA_LIBDIR, err ? ": " : "", err ? err : "");
    return NULL;
}

static int load_sym(void *lib, const char *libname, const char *name, void *fnptr, size_t size)
{
    dlerror();
    void *sym = dlsym(lib, name);
    if (!sym) {
        snprintf(load_why, sizeof load_why, "%s lacks %s (too old a version?)", libname, name);
        return 0;
    }
    memcpy(fnptr, &sym, size); /* POSIX: data and function pointers share a representation */
    return 1;
}

#define LOAD_RT(fn) LOAD_(pdnn__cu_rt, lib_rt, "libcudart", fn)
#define LOAD_DNN(fn) LOAD_(pdnn__cu_dnn, lib_dnn, "libcudnn", fn)
#define LOAD_BLAS(fn) LOAD_(pdnn__cu_blas, lib_blas, "libcublas", fn)
#define LOAD_(table, lib, libname, fn) LOAD_EXPANDED(table, lib, libname, fn)
#define LOAD_EXPANDED(table, lib, libname, fn)                                                     \
    ok = ok && load_sym(lib, libname, #fn, &table.fn, sizeof table.fn);

static void load_libraries(void)
{
    static const char *const rt_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    static const char *const dnn_names[] = {"libcudnn.so.9", "libcudnn.so"};
    static const char *const blas_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    /* The runtime first, and cuDNN and cuBLAS (about 1 GB of libraries)
     * only where it finds a device: a CPU-only node, or a process under
     * valgrind, need not map them to learn that there is no GPU. */
    void *lib_rt = open_first(rt_names, 3, "libcudart");
    if (!lib_rt)
        return;
    int ok = 1;
    CUDART_FUNCS(LOAD_RT)
    if (!ok)
        return;
    /* CUDA 12 exports the current layout as _v2; CUDA 13 under the plain name. */
    dlerror();
    void *props = dlsym(lib_rt, "cudaGetDeviceProperties_v2");
    if (!props)
        props = dlsym(lib_rt, "cudaGetDeviceProperties");
    if (!props) {
        snprintf(load_why, sizeof load_why, "libcudart lacks cudaGetDeviceProperties");
        return;
    }
    memcpy(&pdnn__cu_rt.getDeviceProperties, &props, sizeof props);
    int drv = 0, run = 0;
    cudaError_t e = pdnn__cu_rt.cudaRuntimeGetVersion(&run);
    if (e != cudaSuccess) {
        snprintf(load_why, sizeof load_why, "cudaRuntimeGetVersion failed: %s", pdnn__cu_rt.cudaGetErrorString(e));
        return;
    }
    if (pdnn__cu_rt.cudaDriverGetVersion(&drv) != cudaSuccess)
        drv = 0;
    int count = 0;
    e = pdnn__cu_rt.cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        /* The runtime caches a failed initialisation, so this is final. */
        const char *what = drv == 0                         ? "no NVIDIA driver"
                           : e == cudaErrorInsufficientDriver ? "the NVIDIA driver is too old for this CUDA runtime"
                           : e == cudaErrorNoDevice         ? "no CUDA-capable device"
                                                            : "CUDA cannot start";
        snprintf(load_why, sizeof load_why, "%s (cudaGetDeviceCount: %s)", what, pdnn__cu_rt.cudaGetErrorString(e));
        pdnn__cu_rt.cudaGetLastError();
        return;
    }
    void *lib_dnn = open_first(dnn_names, 2, "libcudnn");
    if (!lib_dnn)
        return;
    void *lib_blas = open_first(blas_names, 3, "libcublas");
    if (!lib_blas)
        return;
    CUDNN_FUNCS(LOAD_DNN)
    CUBLAS_FUNCS(LOAD_BLAS)
    if (!ok)
        return;
    size_t dnn_ver = pdnn__cu_dnn.cudnnGetVersion();
    if (dnn_ver / 10000 != CUDNN_MAJOR) {
        snprintf(load_why, sizeof load_why, "libcudnn is version %zu.%zu; this build needs cuDNN %d",
                 dnn_ver / 10000, dnn_ver / 100 % 100, CUDNN_MAJOR);
        return;
    }
    snprintf(versions, sizeof versions, "CUDA driver %d.%d / runtime %d.%d / cuDNN %zu.%zu.%zu", drv / 1000,
             drv % 1000 / 10, run / 1000, run % 1000 / 10, dnn_ver / 10000, dnn_ver / 100 % 100, dnn_ver % 100);
    load_ok = 1;
    /* The libraries stay loaded for the life of the process. */
}

const char *pdnn__cu_load(void)
{
    pthread_once(&load_once, load_libraries);
    return load_ok ? NULL : load_why;
}

const char *pdnn__cu_versions(void) { return versions; }

/* ---- errors ------------------------------------------------------------- */

pdnn_status pdnn__cu_cuda_fail(const char *call, cudaError_t e)
{
    pdnn__cu_rt.cudaGetLastError(); /* clear a non-sticky error so later calls start clean */
    return pdnn__error(PDNN_ERR_BACKEND, "CUDA: %s failed: %s (%s)", call, pdnn__cu_rt.cudaGetErrorString(e),
                       pdnn__cu_rt.cudaGetErrorName(e));
}

pdnn_status pdnn__cu_dnn_fail(const char *call, cudnnStatus_t s)
{
    return pdnn__error(PDNN_ERR_BACKEND, "cuDNN: %s failed: %s (%d)", call, pdnn__cu_dnn.cudnnGetErrorString(s),
                       (int)s);
}

pdnn_status pdnn__cu_blas_fail(const char *call, cublasStatus_t s)
{
    return pdnn__error(PDNN_ERR_BACKEND, "cuBLAS: %s failed: %s (%d)", call,
                       pdnn__cu_blas.cublasGetStatusString(s), (int)s);
}
