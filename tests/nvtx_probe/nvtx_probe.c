/* An NVTX injection library for nbgpumon's GPU tests: it sees NVTX ranges the way Nsight
 * Systems does, without nsys. Load it by setting NVTX_INJECTION64_PATH to the built .so; each
 * nvtxRangePushA appends "push NAME" and each nvtxRangePop "pop" to the file named by
 * NBGPUMON_NVTX_LOG.
 *
 *     cc -shared -fPIC -o nvtx_probe.so nvtx_probe.c
 *
 * The ABI below is NVTX v3's, as its headers declare it (nvtxDetail/nvtxTypes.h): the library
 * calls InitializeInjectionNvtx2 with its export-table getter; the callbacks table
 * (NVTX_ETID_CALLBACKS) hands out each module's function table, an array of pointers to the
 * library's own function pointers, indexed by callback id. A tool writes its functions there.
 * Each NVTX instance in the process (every library built with the header-only NVTX) calls
 * the initializer once for itself. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*nvtx_function)(void);
typedef nvtx_function **nvtx_function_table;
typedef const void *(*nvtx_get_export_table)(uint32_t table_id);

typedef struct {
    size_t struct_size;
    int (*get_module_function_table)(int module, nvtx_function_table *table,
                                     unsigned int *size);
} nvtx_callbacks_table;

enum {
    NVTX_ETID_CALLBACKS = 1,
    NVTX_CB_MODULE_CORE = 1,
    NVTX_CBID_CORE_RangePushA = 9,
    NVTX_CBID_CORE_RangePop = 11,
};

static __thread int depth; /* NVTX's push/pop ranges are a stack per thread */

static void log_line(const char *what, const char *name) {
    const char *path = getenv("NBGPUMON_NVTX_LOG");
    FILE *log = path ? fopen(path, "a") : NULL;
    if (!log)
        return;
    if (name)
        fprintf(log, "%s %s\n", what, name);
    else
        fprintf(log, "%s\n", what);
    fclose(log);
}

static int range_push_a(const char *message) {
    log_line("push", message ? message : "");
    return depth++;
}

static int range_pop(void) {
    log_line("pop", NULL);
    return depth > 0 ? --depth : -1;
}

int InitializeInjectionNvtx2(nvtx_get_export_table get_export_table) {
    const nvtx_callbacks_table *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    nvtx_function_table table = NULL;
    unsigned int size = 0;
    if (!callbacks || callbacks->struct_size < sizeof(*callbacks))
        return 0;
    if (!callbacks->get_module_function_table(NVTX_CB_MODULE_CORE, &table, &size) || !table ||
        size <= NVTX_CBID_CORE_RangePop)
        return 0;
    *table[NVTX_CBID_CORE_RangePushA] = (nvtx_function)range_push_a;
    *table[NVTX_CBID_CORE_RangePop] = (nvtx_function)range_pop;
    return 1;
}
