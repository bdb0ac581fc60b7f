/* Reading and replacing the library's cache files and the tool's outputs
 * (see fileio.h). Compiled into the polydnn tool too, which links only the
 * public API: libc only here. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long an in-place write waits for a FIFO's reader to open it. */
#define FIFO_WAIT_MS 2000

const char *pdnn__cache_dir(char *buf, size_t len)
{
    const char *dir = getenv("POLYDNN_CACHE_DIR");
    int w;
    if (dir && *dir) {
        w = snprintf(buf, len, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        w = snprintf(buf, len, "%s/polydnn", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        w = snprintf(buf, len, "%s/.cache/polydnn", dir);
    } else {
        return NULL;
    }
    return w > 0 && (size_t)w < len ? buf : NULL;
}

int pdnn__program_cache_setting(void)
{
    const char *env = getenv("POLYDNN_PROGRAM_CACHE");
    if (!env || strcmp(env, "on") == 0)
        return 1;
    return strcmp(env, "off") == 0 ? 0 : -1;
}

int pdnn__make_parents(const char *path)
{
    char dir[4096];
    const size_t len = strlen(path);
    if (len >= sizeof dir)
        return -1;
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static const char *kind_of(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

int pdnn__file_open_read(const char *path, FILE **out, struct stat *sb, char *why, size_t why_len)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer forever. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (fstat(fd, sb) != 0) {
        close(fd);
        return 0;
    }
    if (!S_ISREG(sb->st_mode)) {
        snprintf(why, why_len, "it is %s, not a regular file", kind_of(sb->st_mode));
        close(fd);
        return -1;
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return 0;
    }
    *out = f;
    return 1;
}

/* Makes the rename in dir durable (best effort: not every file system
 * can sync a directory). */
static void sync_dir(const char *dir)
{
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Creates the temporary file tmp, whose name ends in "XXXXXX", replaced
 * here until an exclusive create succeeds. Not mkstemp: its file is 0600,
 * and the mode a new file should have (0666 less the umask, and a
 * directory's default ACL) is applied only by the kernel at the create;
 * the umask cannot be read without setting it, process-wide. */
static int create_temp(char *tmp)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static atomic_uint_fast64_t calls;
    char *x = tmp + strlen(tmp) - 6;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40);
    for (int attempt = 0; attempt < 100; attempt++) {
        /* A taken name costs a retry, never a clobber (O_EXCL), so the
         * names need only differ, not be unguessable. */
        v = v * 6364136223846793005u + 1442695040888963407u + atomic_fetch_add(&calls, 1);
        uint64_t r = v >> 20;
        for (int i = 0; i < 6; i++, r /= 62)
            x[i] = letters[r % 62];
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* The outcome a failed replace reports. */
static const char *left_as(const struct stat *old)
{
    return old ? "the existing file is unchanged" : "nothing was written";
}

/* Writes f's contents and closes f, checking every step: stdio may
 * report a full disk only at the flush, and some file systems only at
 * fsync or close. sync: fsync before closing (and fstat into written, when
 * not NULL). Returns the step that failed, with *err its errno (0 where
 * none was set), or NULL. */
static const char *write_steps(FILE *f, pdnn__file_writer write, void *arg, int sync, struct stat *written, int *err)
{
    const char *step = NULL;
    if (write(f, arg) != 0 || ferror(f))
        step = "writing";
    else if (fflush(f) != 0)
        step = "flushing";
    else if (sync && fsync(fileno(f)) != 0)
        step = "syncing";
    else if (sync && written && fstat(fileno(f), written) != 0)
        step = "checking";
    *err = step ? errno : 0;
    if (fclose(f) != 0 && !step) {
        *err = errno;
        step = "closing";
    }
    return step;
}

/* Writes a device or FIFO (/dev/null, /dev/stdout) in place: it has no
 * old contents to keep, and renaming a file over it would replace it. */
static int write_in_place(const char *path, const char *dst, pdnn__file_writer write, void *arg, char *why,
                          size_t why_len)
{
    int err = 0;
    errno = 0;
    /* Opened without blocking: a FIFO nobody reads used to hang the save
     * (train --save fifo.npz) in the open. A reader that is about to open
     * it (a pipeline starting up) gets FIFO_WAIT_MS; after that the FIFO
     * is refused (ENXIO). Writes then block as usual, for a reader that
     * is there. */
    int fd = open(dst, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    for (int waited = 0; fd < 0 && errno == ENXIO && waited < FIFO_WAIT_MS; waited += 10) {
        const struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
        fd = open(dst, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    }
    FILE *f = NULL;
    const char *step = "opening";
    if (fd >= 0) {
        const int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !(f = fdopen(fd, "wb")))
            close(fd);
    }
    if (f)
        step = write_steps(f, write, arg, 0, NULL, &err);
    else
        err = errno;
    if (!step)
        return 0;
    snprintf(why, why_len, "%s: %s it in place failed: %s", path, step,
             err == ENXIO ? "it is a FIFO that no process is reading" : err ? strerror(err) : "an I/O error");
    return -1;
}

/* A temporary file unchanged this long, and locked by no process, is a
 * dead writer's: writers hold a lock on theirs (write_and_rename), which
 * goes when the process does; the age covers the moment between the
 * close (which drops the lock) and the rename, and a writer in this very
 * process, whose lock F_GETLK does not report. */
#define STALE_SECONDS 60

/* Removes what writers killed during a save left beside dst ("NAME.tmp-
 * XXXXXX" of this target, ".polydnn-tmp-XXXXXX" of any): 2 of 20 kills
 * during a checkpoint's save left its 24 MB temporary file for good. */
static void remove_stale_temps(const char *dst, size_t dir_len)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", dir_len ? (int)dir_len : 1, dir_len ? dst : ".");
    const char *base = dst + dir_len;
    const size_t bl = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    const time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        const size_t len = strlen(nm);
        if (!((len == bl + 11 && strncmp(nm, base, bl) == 0 && strncmp(nm + bl, ".tmp-", 5) == 0) ||
              (len == 19 && strncmp(nm, ".polydnn-tmp-", 13) == 0)))
            continue;
        const int fd = openat(dirfd(d), nm, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat sb;
        struct flock fl;
        memset(&fl, 0, sizeof fl);
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && now - sb.st_mtime >= STALE_SECONDS &&
            fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_UNLCK)
            (void)unlinkat(dirfd(d), nm, 0);
        close(fd);
    }
    closedir(d);
}

/* Replaces dst (path, or the file its link leads to), old its stat when
 * it exists: a new file next to it, written and checked, renamed over it. */
static int write_and_rename(const char *path, const char *dst, const struct stat *old, pdnn__file_writer write,
                            void *arg, struct stat *written, char *why, size_t why_len)
{
    const char *slash = strrchr(dst, '/');
    const size_t dir_len = slash ? (size_t)(slash - dst) + 1 : 0;
    char tmp[PATH_MAX + 32];
    if (strlen(dst) >= PATH_MAX) {
        snprintf(why, why_len, "%s: the path is too long; %s", path, left_as(old));
        return -1;
    }
    /* Named after the target, so that one left by a killed process says
     * what it was; a name too long for that gets a short one. */
    if (strlen(dst + dir_len) + sizeof ".tmp-XXXXXX" - 1 <= NAME_MAX)
        snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", dst);
    else
        snprintf(tmp, sizeof tmp, "%.*s.polydnn-tmp-XXXXXX", (int)dir_len, dst);
    remove_stale_temps(dst, dir_len);
    const int fd = create_temp(tmp);
    if (fd < 0) {
        snprintf(why, why_len, "%s: creating a temporary file in its directory failed: %s; %s", path,
                 strerror(errno), left_as(old));
        return -1;
    }
    /* Held until the close: a later save tells a live writer's file from
     * a dead one's by it (best effort: not every file system locks). */
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    (void)fcntl(fd, F_SETLK, &fl);
    /* A replaced file keeps its permissions (not its special bits). */
    if (old)
        (void)fchmod(fd, old->st_mode & 0777);
    FILE *f = fdopen(fd, "wb");
    const char *step = NULL;
    int err = 0;
    if (!f) {
        err = errno;
        close(fd);
        step = "opening";
    } else {
        errno = 0;
        step = write_steps(f, write, arg, 1, written, &err);
    }
    if (!step && rename(tmp, dst) != 0) {
        err = errno;
        step = "renaming";
    }
    if (step) {
        snprintf(why, why_len, "%s: %s %s failed: %s; %s", path, step, tmp, err ? strerror(err) : "an I/O error",
                 left_as(old));
        unlink(tmp);
        return -1;
    }
    if (dir_len) {
        tmp[dir_len] = '\0';
        sync_dir(tmp);
    } else {
        sync_dir(".");
    }
    return 0;
}

/* pdnn__file_replace (named 0) and pdnn__file_replace_named (1). */
static int replace(const char *path, int named, pdnn__file_writer write, void *arg, struct stat *written,
                   char *why, size_t why_len)
{
    struct stat sb;
    char real[PATH_MAX];
    const char *dst = path;
    /* A link the user named stays a link: its target is replaced. A
     * dangling one is replaced by the file. */
    if (named && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        if (realpath(path, real))
            dst = real;
        else if (errno != ENOENT) {
            snprintf(why, why_len, "%s: following the link failed: %s; nothing was written", path,
                     strerror(errno));
            return -1;
        }
    }
    const int exists = stat(dst, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        if (named)
            return write_in_place(path, dst, write, arg, why, why_len);
        snprintf(why, why_len, "%s is %s, not a regular file; not replacing it", path, kind_of(sb.st_mode));
        return -1;
    }
    if (!named && pdnn__make_parents(path) != 0) {
        snprintf(why, why_len, "creating the directory of %s failed: %s", path, strerror(errno));
        return -1;
    }
    return write_and_rename(path, dst, exists ? &sb : NULL, write, arg, written, why, why_len);
}

int pdnn__file_replace(const char *path, pdnn__file_writer write, void *arg, struct stat *written, char *why,
                       size_t why_len)
{
    return replace(path, 0, write, arg, written, why, why_len);
}

int pdnn__file_replace_named(const char *path, pdnn__file_writer write, void *arg, char *why, size_t why_len)
{
    return replace(path, 1, write, arg, NULL, why, why_len);
}

int pdnn__file_lock(const char *path)
{
    const size_t size = strlen(path) + 8;
    char *name = malloc(size);
    if (!name)
        return -1;
    snprintf(name, size, "%s.lock", path);
    /* O_NONBLOCK: a FIFO planted here must not block the open either. */
    const int fd = open(name, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    free(name);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -1;
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int rc;
    while ((rc = fcntl(fd, F_SETLKW, &fl)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void pdnn__file_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the lock */
}

int pdnn__file_same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && (a->st_mode & S_IFMT) == (b->st_mode & S_IFMT) &&
           a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}
