/* Reading and replacing the files the library keeps (fileio.c): the
 * tuning cache and the OpenCL program cache; and the files the polydnn
 * tool writes, which compiles fileio.c in (it depends on libc only). Reads
 * never block on a FIFO or device at a cache path; writes go to a
 * temporary file in the same directory, flushed to disk, renamed over the
 * target only when complete. */
#ifndef PDNN_FILEIO_H
#define PDNN_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* The cache directory, shared by the tuning cache and the OpenCL program
 * cache: $POLYDNN_CACHE_DIR, else $XDG_CACHE_HOME/polydnn, else
 * $HOME/.cache/polydnn, written into buf; NULL when none is known (no
 * HOME) or it does not fit. */
const char *pdnn__cache_dir(char *buf, size_t len);

/* POLYDNN_PROGRAM_CACHE: 1 when unset or "on", 0 for "off", -1 for
 * anything else. The compiled-program cache is independent of
 * POLYDNN_TUNING. */
int pdnn__program_cache_setting(void);

/* Makes every directory above path (mkdir -p of its dirname); 0 on
 * success, -1 with errno set. */
int pdnn__make_parents(const char *path);

/* Opens path for reading without blocking, whatever it is. Returns 1 with
 * *out open on a regular file and *sb its fstat; 0 when there is no file
 * (or it cannot be opened: treated as absent); -1 with a reason in why
 * when it is not a regular file (a FIFO, a device, a directory), *sb then
 * describing it. */
int pdnn__file_open_read(const char *path, FILE **out, struct stat *sb, char *why, size_t why_len);

/* Writes one file's contents to f; 0, or -1 when writing failed. */
typedef int (*pdnn__file_writer)(FILE *f, void *arg);

/* Replaces path with what write puts in a new file: a temporary file in
 * path's directory (named path.tmp-XXXXXX, created exclusively, with the
 * mode fopen would give, or the replaced file's permissions), written,
 * flushed and fsync'd, checked for every write error (ENOSPC, EFBIG), then
 * renamed over path, and the directory fsync'd. Returns 0, with *written
 * (may be NULL) the new file's fstat; or -1 with why naming path, the step
 * that failed and the reason, path untouched and no temporary file left.
 * For the files the library keeps: path's directory is made if missing,
 * and anything but a regular file at path is refused. */
int pdnn__file_replace(const char *path, pdnn__file_writer write, void *arg, struct stat *written, char *why,
                       size_t why_len);

/* pdnn__file_replace for a path a user named (every file the polydnn tool
 * writes): its directory must exist; a symbolic link is followed, so the
 * link stays and its target is replaced; a device or FIFO (/dev/null,
 * /dev/stdout) is written in place, having no contents to keep and no way
 * to be renamed over. */
int pdnn__file_replace_named(const char *path, pdnn__file_writer write, void *arg, char *why, size_t why_len);

/* Takes an exclusive advisory lock (fcntl) on path".lock", created if
 * missing, waiting for other processes that hold it; the data file itself
 * is replaced by rename, so it cannot carry the lock. Returns the lock's
 * descriptor for pdnn__file_unlock, or -1 when no lock could be taken. */
int pdnn__file_lock(const char *path);
void pdnn__file_unlock(int fd);

/* 1 when a and b describe the same version of a file: same file (device,
 * inode, type), size and modification time. */
int pdnn__file_same(const struct stat *a, const struct stat *b);

#endif
