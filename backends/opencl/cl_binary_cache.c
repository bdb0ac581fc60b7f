/* The on-disk cache of compiled OpenCL programs, so that a second process
 * loads what the first compiled instead of running the compiler again.
 *
 * Every program build of the backend (the kernel cache in cl_common.c)
 * looks here first. The key is the device (cl_dev.program_key:
 * vendor|name|driver version), the build options and a
 * hash of the sources' bytes (POLYDNN_KERNEL_DIR copies included, so an
 * edited kernel is a new key); the format version is in the directory name
 * and in each file's header. Files live in
 * pdnn__cache_dir()/programs-v2/<sources>-<hash of the key>.bin:
 *
 *   bytes 0-7    magic "PDNNCLPB"
 *   8-11         format version (uint32, host order)
 *   12-15        key length (uint32)
 *   16-23        payload length (uint64)
 *   24-31        FNV-1a 64 of the key text and the payload (uint64)
 *   32-          the key text, then the payload (the driver's binary)
 *
 * A file is used only if every field matches this build and device and
 * the checksum is right; the key is inside the checksummed bytes, so a
 * payload moved under another key (its checksum recomputed over the
 * payload, as format 1 first did) is refused, not run as the wrong kernel.
 * The directory is trusted as PoCL's and MIOpen's caches are: the checksum
 * catches accidents, not a forger who recomputes it; anything else (truncated, flipped
 * bytes, another key behind the same hash, a binary the driver refuses,
 * a FIFO or other non-regular file at the path) is ignored with a warning,
 * rebuilt from source and overwritten (a non-regular file is left alone).
 * A binary that passes every check but lacks a kernel its sources define
 * (another program's binary under this key) is caught when the kernel
 * cache creates that kernel: pdnn__cl_program_cache_drop deletes the file
 * with a warning and the program is rebuilt from source and stored again. The cache
 * is on by default; POLYDNN_PROGRAM_CACHE=off turns it off (POLYDNN_TUNING
 * does not).
 *
 * Binaries are written when the device is torn down (context destroy),
 * not when built: asking PoCL for a binary compiles every kernel of the
 * program (2 s for conv2d.cl, pool2d.cl and elementwise.cl together on the
 * 2-core development machine, twice their build), which would otherwise
 * land on the first op of a cold start. Not on a thread: a process that exits while a driver's compiler
 * runs on another thread crashes in the compiler's torn-down state (seen
 * with PoCL 3.1 / LLVM 15), and exit handlers cannot be ordered before
 * the compiler's. A process that never destroys its context therefore
 * caches nothing. */
#include "backends/opencl/cl_internal.h"
#include "core/fileio.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "PDNNCLPB"
#define FORMAT 2u /* 2: the checksum covers the key and the payload */
#define HEADER_BYTES 32
/* Larger files are not programs of ours: refuse before reading them. */
#define MAX_PAYLOAD ((uint64_t)1 << 30)

static atomic_long hits, misses, stores, rejected;

void pdnn__opencl_program_cache_stats(pdnn__program_cache_stats *out)
{
    out->hits = atomic_load(&hits);
    out->misses = atomic_load(&misses);
    out->stores = atomic_load(&stores);
    out->rejected = atomic_load(&rejected);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_START 0xcbf29ce484222325ull

/* The key text: device, options, and the sources (each length hashed with
 * its bytes so that moving text between sources changes the key). */
static char *make_key(const cl_dev *d, const char *const *texts, const size_t *lens, cl_uint n, const char *opts)
{
    uint64_t h = FNV_START;
    for (cl_uint i = 0; i < n; i++) {
        const uint64_t len = lens[i];
        h = fnv1a(h, &len, sizeof len);
        h = fnv1a(h, texts[i], lens[i]);
    }
    const size_t size = strlen(d->program_key) + strlen(opts) + 64;
    char *key = malloc(size);
    if (key)
        snprintf(key, size, "device=%s\noptions=%s\nsources=%u:%016llx", d->program_key, opts, (unsigned)n,
                 (unsigned long long)h);
    return key;
}

/* pdnn__cache_dir()/programs-v2/<what>-<hash>.bin, with what reduced to
 * characters that are safe in a file name. */
static int make_path(char *buf, size_t size, const char *what, const char *key)
{
    char dir[4096];
    if (!pdnn__cache_dir(dir, sizeof dir))
        return -1;
    char name[49];
    size_t j = 0;
    for (const char *c = what; *c && j < sizeof name - 1; c++) {
        const int safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                         *c == '.' || *c == '_' || *c == '-' || *c == '+';
        name[j++] = safe ? *c : '_';
    }
    name[j] = '\0';
    const int w = snprintf(buf, size, "%s/programs-v%u/%s-%016llx.bin", dir, FORMAT, name,
                           (unsigned long long)fnv1a(FNV_START, key, strlen(key)));
    return w > 0 && (size_t)w < size ? 0 : -1;
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, sizeof v); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, sizeof v); }
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Reads and validates the file at path. Returns 1 with *payload (malloc'd),
 * *len and *sb (the file read), 0 when there is no file, -1 with *why when
 * the file is not a valid entry for key (why_buf holds a reason that is not
 * a constant). */
static int load(const char *path, const char *key, unsigned char **payload, size_t *len, struct stat *sb,
                const char **why, char *why_buf, size_t why_len)
{
    FILE *f = NULL;
    const int opened = pdnn__file_open_read(path, &f, sb, why_buf, why_len);
    if (opened <= 0) {
        *why = why_buf;
        return opened;
    }
    const size_t klen = strlen(key);
    unsigned char head[HEADER_BYTES];
    int bad = 0;
    if (fread(head, 1, sizeof head, f) != sizeof head) {
        *why = "it is shorter than the header";
        bad = 1;
    } else if (memcmp(head, MAGIC, 8) != 0) {
        *why = "it does not start with the program cache's magic";
        bad = 1;
    } else if (get_u32(head + 8) != FORMAT) {
        *why = "it is from another format version";
        bad = 1;
    } else if (get_u32(head + 12) != klen) {
        *why = "its key differs from this device, options and sources";
        bad = 1;
    } else if (get_u64(head + 16) == 0 || get_u64(head + 16) > MAX_PAYLOAD ||
               (uint64_t)sb->st_size != HEADER_BYTES + klen + get_u64(head + 16)) {
        *why = "its length does not match its header (truncated or extended)";
        bad = 1;
    }
    unsigned char *buf = NULL;
    if (!bad) {
        const size_t plen = (size_t)get_u64(head + 16);
        buf = malloc(klen + plen);
        if (!buf) {
            *why = "out of host memory reading it";
            bad = 1;
        } else if (fread(buf, 1, klen + plen, f) != klen + plen) {
            *why = "reading it failed";
            bad = 1;
        } else if (memcmp(buf, key, klen) != 0) {
            *why = "its key differs from this device, options and sources";
            bad = 1;
        } else if (fnv1a(FNV_START, buf, klen + plen) != get_u64(head + 24)) {
            *why = "its key and payload do not match its checksum";
            bad = 1;
        } else {
            memmove(buf, buf + klen, plen);
            *payload = buf;
            *len = plen;
        }
    }
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    return 1;
}

typedef struct program_file {
    const unsigned char *head;
    const char *key;
    const unsigned char *payload;
    size_t klen, plen;
} program_file;

static int write_program(FILE *f, void *arg)
{
    const program_file *p = arg;
    return fwrite(p->head, 1, HEADER_BYTES, f) != HEADER_BYTES || fwrite(p->key, 1, p->klen, f) != p->klen ||
                   fwrite(p->payload, 1, p->plen, f) != p->plen
               ? -1
               : 0;
}

/* Writes the program's binary for d to path. Another process (or a second
 * identical device in this one) may write the same file at the same time:
 * each writes a temporary file of its own in the same directory and renames
 * it over path (pdnn__file_replace), which is atomic, so a reader sees one
 * whole file or none, and a failed write leaves the previous file. */
static int store(cl_program prog, const char *path, const char *key)
{
    size_t plen = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof plen, &plen, NULL) != CL_SUCCESS || plen == 0 ||
        plen > MAX_PAYLOAD) {
        pdnn__debug("OpenCL program cache: the driver gives no binary for %s; not cached", path);
        return -1;
    }
    unsigned char *payload = malloc(plen);
    unsigned char *ptrs[1] = {payload};
    if (!payload || clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != CL_SUCCESS) {
        free(payload);
        pdnn__debug("OpenCL program cache: could not read the binary for %s; not cached", path);
        return -1;
    }
    const size_t klen = strlen(key);
    unsigned char head[HEADER_BYTES];
    memcpy(head, MAGIC, 8);
    put_u32(head + 8, FORMAT);
    put_u32(head + 12, (uint32_t)klen);
    put_u64(head + 16, plen);
    put_u64(head + 24, fnv1a(fnv1a(FNV_START, key, klen), payload, plen));
    program_file pf = {head, key, payload, klen, plen};
    char why[768];
    const int rc = pdnn__file_replace(path, write_program, &pf, NULL, why, sizeof why);
    free(payload);
    if (rc != 0) {
        pdnn__debug("OpenCL program cache: %s; the program stays uncached", why);
        return -1;
    }
    atomic_fetch_add(&stores, 1);
    pdnn__debug("OpenCL program cache: stored %s", path);
    return 0;
}

/* A program's place in the cache. Queued: programs built from source and
 * not stored yet, across devices; each holds a reference to its program
 * (prog NULL: not built yet). Devices are torn down without their lock,
 * and builds of different devices run in parallel, hence a lock of its
 * own. A slot of a program loaded from a file remembers which file
 * (dev, ino), so that dropping it deletes that file and not a newer one. */
struct pdnn__cl_cache_slot {
    const cl_dev *dev;
    cl_program prog;
    char *path, *key;
    dev_t file_dev;
    ino_t file_ino;
    struct pdnn__cl_cache_slot *next;
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pdnn__cl_cache_slot *pending;

void pdnn__cl_program_cache_slot_free(pdnn__cl_cache_slot *m)
{
    if (!m)
        return;
    free(m->path);
    free(m->key);
    free(m);
}

void pdnn__cl_program_cache_flush(cl_dev *d)
{
    pthread_mutex_lock(&pending_lock);
    pdnn__cl_cache_slot *mine = NULL;
    for (pdnn__cl_cache_slot **pp = &pending; *pp;) {
        pdnn__cl_cache_slot *p = *pp;
        if (p->dev == d) {
            *pp = p->next;
            p->next = mine;
            mine = p;
        } else {
            pp = &p->next;
        }
    }
    pthread_mutex_unlock(&pending_lock);
    while (mine) {
        pdnn__cl_cache_slot *next = mine->next;
        store(mine->prog, mine->path, mine->key);
        clReleaseProgram(mine->prog);
        pdnn__cl_program_cache_slot_free(mine);
        mine = next;
    }
}

void pdnn__cl_program_cache_add(cl_dev *d, pdnn__cl_cache_slot *slot, cl_program prog)
{
    if (!slot)
        return;
    if (!prog) {
        pdnn__cl_program_cache_slot_free(slot);
        return;
    }
    if (clRetainProgram(prog) != CL_SUCCESS) {
        /* Without a reference of our own it cannot wait for teardown. */
        store(prog, slot->path, slot->key);
        pdnn__cl_program_cache_slot_free(slot);
        return;
    }
    slot->dev = d;
    slot->prog = prog;
    pthread_mutex_lock(&pending_lock);
    slot->next = pending;
    pending = slot;
    pthread_mutex_unlock(&pending_lock);
}

void pdnn__cl_program_cache_drop(pdnn__cl_cache_slot *slot, const char *why)
{
    atomic_fetch_add(&rejected, 1);
    struct stat sb;
    /* Only the file that was loaded: another process may have replaced
     * it with a good one since. */
    const int same = stat(slot->path, &sb) == 0 && sb.st_dev == slot->file_dev && sb.st_ino == slot->file_ino;
    const int deleted = same && unlink(slot->path) == 0;
    fprintf(stderr,
            "polydnn: warning: the cached OpenCL program %s is not the program its key names (%s); %s, "
            "rebuilding it from source\n",
            slot->path, why, deleted ? "deleted it" : "it was already replaced");
}

/* Builds prog from a validated binary; NULL when the driver refuses it. */
static cl_program from_binary(cl_dev *d, const unsigned char *payload, size_t len, const char *opts,
                              const char **why)
{
    cl_int err = CL_SUCCESS, bin_status = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(d->ctx, 1, &d->id, &len, &payload, &bin_status, &err);
    if (!prog || err != CL_SUCCESS || bin_status != CL_SUCCESS) {
        *why = "the driver does not accept the binary";
        if (prog)
            clReleaseProgram(prog);
        return NULL;
    }
    if (clBuildProgram(prog, 1, &d->id, opts, NULL, NULL) != CL_SUCCESS) {
        *why = "building the binary failed";
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

cl_program pdnn__cl_program_cache_find(cl_dev *d, const char *const *texts, const size_t *lens, cl_uint n,
                                       const char *opts, const char *what, pdnn__cl_cache_slot **slot)
{
    *slot = NULL;
    const int setting = pdnn__program_cache_setting();
    if (setting <= 0) {
        if (setting < 0) /* set to something invalid after the context was created */
            pdnn__debug("OpenCL program cache: POLYDNN_PROGRAM_CACHE='%s' is invalid; the cache is off",
                        getenv("POLYDNN_PROGRAM_CACHE"));
        return NULL;
    }
    char *key = make_key(d, texts, lens, n, opts);
    char path[4200];
    if (!key || make_path(path, sizeof path, what, key) != 0) {
        free(key);
        pdnn__debug("OpenCL program cache: no cache directory (set POLYDNN_CACHE_DIR or HOME); building %s",
                    what);
        return NULL;
    }
    unsigned char *payload = NULL;
    size_t len = 0;
    const char *why = NULL;
    char why_buf[128];
    struct stat sb;
    const int found = load(path, key, &payload, &len, &sb, &why, why_buf, sizeof why_buf);
    cl_program prog = found > 0 ? from_binary(d, payload, len, opts, &why) : NULL;
    free(payload);
    pdnn__cl_cache_slot *m = calloc(1, sizeof *m);
    if (m) {
        m->path = strdup(path);
        m->key = key;
        key = NULL;
    }
    free(key);
    if (m && !m->path) {
        pdnn__cl_program_cache_slot_free(m); /* out of host memory: the program stays uncached */
        m = NULL;
    }
    if (prog) {
        atomic_fetch_add(&hits, 1);
        pdnn__debug("OpenCL program cache: loaded %s from %s", what, path);
        if (m) {
            m->file_dev = sb.st_dev;
            m->file_ino = sb.st_ino;
        }
        *slot = m;
        return prog;
    }
    atomic_fetch_add(&misses, 1);
    if (found) {
        /* Never trusted in part: the file is rebuilt and overwritten. */
        atomic_fetch_add(&rejected, 1);
        fprintf(stderr, "polydnn: warning: ignoring the cached OpenCL program %s: %s; rebuilding it\n", path,
                why);
    } else {
        pdnn__debug("OpenCL program cache: %s is not cached (%s); building it from source", what, path);
    }
    *slot = m;
    return NULL;
}
