/* Reading and replacing the library's cache files (see fileio.h). */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Makes the rename durable (best effort: not every file system can sync
 * a directory). */
static void sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else {
        const size_t len = slash == path ? 1 : (size_t)(slash - path);
        if (len >= sizeof dir)
            return;
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
    const int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int pdnn__file_replace(const char *path, pdnn__file_writer write, void *arg, struct stat *written, char *why,
                       size_t why_len)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        snprintf(why, why_len, "%s is %s, not a regular file; not replacing it", path, kind_of(sb.st_mode));
        return -1;
    }
    if (pdnn__make_parents(path) != 0) {
        snprintf(why, why_len, "creating the directory of %s failed: %s", path, strerror(errno));
        return -1;
    }
    const size_t tmp_size = strlen(path) + 16;
    char *tmp = malloc(tmp_size);
    if (!tmp) {
        snprintf(why, why_len, "out of host memory writing %s", path);
        return -1;
    }
    snprintf(tmp, tmp_size, "%s.tmp-XXXXXX", path);
    const int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(why, why_len, "creating a temporary file next to %s failed: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    /* mkstemp makes it 0600; the cache directory itself is 0755. */
    (void)fchmod(fd, 0644);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    FILE *f = fdopen(fd, "wb");
    const char *step = NULL;
    int err = 0;
    if (!f) {
        err = errno;
        close(fd);
        step = "opening";
    } else {
        /* Every step's failure is checked: stdio may report a full disk
         * only at the flush, and some file systems only at fsync or close. */
        errno = 0;
        if (write(f, arg) != 0 || ferror(f))
            step = "writing";
        else if (fflush(f) != 0)
            step = "flushing";
        else if (fsync(fileno(f)) != 0)
            step = "syncing";
        else if (written && fstat(fileno(f), written) != 0)
            step = "checking";
        err = step ? errno : 0;
        if (fclose(f) != 0 && !step) {
            err = errno;
            step = "closing";
        }
    }
    if (step) {
        snprintf(why, why_len, "%s %s failed: %s", step, tmp, err ? strerror(err) : "an I/O error");
    } else if (rename(tmp, path) != 0) {
        snprintf(why, why_len, "renaming %s to %s failed: %s", tmp, path, strerror(errno));
        step = "renaming";
    }
    if (step) {
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    sync_dir(path);
    return 0;
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
