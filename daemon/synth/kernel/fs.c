/* SPDX-License-Identifier: MIT */
/* Files: fd lookup and reads/writes dispatched through file_operations
 * of a pipe, a tty, /dev/null and an ext4-like regular file. */

#include "kernel.h"

struct pipe_inode_info {
        char buf[1024];
        u32 head, tail;
        u32 readers, writers;
};

static struct pipe_inode_info pipes[4];
static char tty_buf[512];
static u32 tty_pos;
static u8 page_cache[8][512];

static noinline ssize_t pipe_read(struct file *f, char *buf, size_t n, u64 *pos) {
        struct pipe_inode_info *p = f->private_data;
        size_t done = 0;

        (void) pos;
        if (!p)
                return -9;
        while (done < n && p->tail != p->head) {
                buf[done++] = p->buf[p->tail & 1023];
                p->tail++;
        }
        if (!done && !p->writers)
                return 0;
        return done ? (ssize_t) done : -11;
}

static noinline ssize_t pipe_write(struct file *f, const char *buf, size_t n, u64 *pos) {
        struct pipe_inode_info *p = f->private_data;
        size_t done = 0;

        (void) pos;
        if (!p || !p->readers)
                return -32;
        while (done < n && p->head - p->tail < sizeof p->buf) {
                p->buf[p->head & 1023] = buf[done++];
                p->head++;
        }
        return done ? (ssize_t) done : -11;
}

static noinline int pipe_poll(struct file *f, int events) {
        struct pipe_inode_info *p = f->private_data;
        int mask = 0;

        if (p->head != p->tail)
                mask |= 1;
        if (p->head - p->tail < sizeof p->buf)
                mask |= 4;
        return mask & events;
}

static noinline int pipe_release(struct file *f) {
        struct pipe_inode_info *p = f->private_data;

        if (f->f_flags & 1)
                p->writers--;
        else
                p->readers--;
        return 0;
}

static noinline ssize_t tty_write(struct file *f, const char *buf, size_t n, u64 *pos) {
        (void) f;
        for (size_t i = 0; i < n; i++) {
                char c = buf[i];

                switch (c) {
                case '\n':
                        tty_buf[tty_pos++ & 511] = '\r';
                        tty_buf[tty_pos++ & 511] = '\n';
                        break;
                case '\t':
                        do
                                tty_buf[tty_pos++ & 511] = ' ';
                        while (tty_pos & 7);
                        break;
                case '\b':
                        if (tty_pos)
                                tty_pos--;
                        break;
                case 0x1b:
                        tty_buf[tty_pos++ & 511] = '^';
                        tty_buf[tty_pos++ & 511] = '[';
                        break;
                default:
                        tty_buf[tty_pos++ & 511] = c;
                        break;
                }
        }
        *pos += n;
        return (ssize_t) n;
}

static noinline ssize_t tty_read(struct file *f, char *buf, size_t n, u64 *pos) {
        size_t i = 0;

        (void) f;
        while (i < n && i < tty_pos) {
                buf[i] = tty_buf[i];
                if (buf[i++] == '\n')
                        break;
        }
        *pos += i;
        return (ssize_t) i;
}

static noinline int tty_poll(struct file *f, int events) {
        (void) f;
        return tty_pos ? events : 0;
}

static noinline ssize_t null_read(struct file *f, char *buf, size_t n, u64 *pos) {
        (void) f;
        (void) buf;
        (void) n;
        (void) pos;
        return 0;
}

static noinline ssize_t null_write(struct file *f, const char *buf, size_t n, u64 *pos) {
        (void) f;
        (void) buf;
        (void) pos;
        return (ssize_t) n;
}

static noinline u8 *find_get_page(u64 index) {
        u32 h = jhash(&index, sizeof index, 0) & 7;

        return page_cache[h];
}

static noinline ssize_t ext4_file_read_iter(struct file *f, char *buf, size_t n, u64 *pos) {
        size_t done = 0;

        (void) f;
        while (done < n) {
                u64 index = (*pos + done) >> 9;
                u32 off = (u32) ((*pos + done) & 511);
                size_t chunk = 512 - off;
                u8 *page = find_get_page(index);

                if (chunk > n - done)
                        chunk = n - done;
                if (!page)
                        break;
                memcpy(buf + done, page + off, chunk);
                done += chunk;
        }
        *pos += done;
        return (ssize_t) done;
}

static noinline ssize_t ext4_file_write_iter(struct file *f, const char *buf, size_t n, u64 *pos) {
        size_t done = 0;

        if (f->f_flags & 0x400) /* O_APPEND */
                *pos = 4096;
        while (done < n) {
                u8 *page = find_get_page((*pos + done) >> 9);
                u32 off = (u32) ((*pos + done) & 511);
                size_t chunk = 512 - off;

                if (chunk > n - done)
                        chunk = n - done;
                memcpy(page + off, buf + done, chunk);
                done += chunk;
        }
        *pos += done;
        return (ssize_t) done;
}

static const struct file_operations pipefifo_fops = {
        .read = pipe_read,
        .write = pipe_write,
        .poll = pipe_poll,
        .release = pipe_release,
};

static const struct file_operations tty_fops = {
        .read = tty_read,
        .write = tty_write,
        .poll = tty_poll,
};

static const struct file_operations null_fops = {
        .read = null_read,
        .write = null_write,
};

static const struct file_operations ext4_file_operations = {
        .read = ext4_file_read_iter,
        .write = ext4_file_write_iter,
};

static struct file files[8] = {
        [0] = { .f_op = &tty_fops },
        [1] = { .f_op = &tty_fops },
        [2] = { .f_op = &null_fops },
        [3] = { .f_op = &pipefifo_fops, .private_data = &pipes[0] },
        [4] = { .f_op = &pipefifo_fops, .private_data = &pipes[1], .f_flags = 1 },
        [5] = { .f_op = &ext4_file_operations },
        [6] = { .f_op = &ext4_file_operations, .f_flags = 0x400 },
        [7] = { .f_op = &pipefifo_fops, .private_data = &pipes[2] },
};

noinline struct file *fget(unsigned int fd) {
        struct task_struct *t = current;

        if (fd < ARRAY_SIZE(t->files) && t->files[fd])
                return t->files[fd];
        if (fd < ARRAY_SIZE(files))
                return &files[fd];
        return NULL;
}

static noinline int rw_verify_area(struct file *f, u64 *pos, size_t n) {
        if ((s64) *pos < 0 || (s64) (*pos + n) < 0)
                return -22;
        if (f->f_flags & 0x8000)
                return -1;
        return 0;
}

noinline ssize_t vfs_read(struct file *f, char *buf, size_t n, u64 *pos) {
        int r = rw_verify_area(f, pos, n);

        if (r < 0)
                return r;
        if (!f->f_op->read)
                return -22;
        return f->f_op->read(f, buf, n, pos);
}

noinline ssize_t vfs_write(struct file *f, const char *buf, size_t n, u64 *pos) {
        int r = rw_verify_area(f, pos, n);

        if (r < 0)
                return r;
        if (!f->f_op->write)
                return -22;
        return f->f_op->write(f, buf, n, pos);
}
