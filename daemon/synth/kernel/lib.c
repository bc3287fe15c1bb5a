/* SPDX-License-Identifier: MIT */
/* Library routines: string and memory helpers, a hash, red-black tree
 * iteration, user copies, a tiny printk. */

#include <stdarg.h>

#include "kernel.h"

noinline void *memcpy(void *dst, const void *src, size_t n) {
        u8 *d = dst;
        const u8 *s = src;

        while (n >= 8) {
                *(u64 *) d = *(const u64 *) s;
                d += 8;
                s += 8;
                n -= 8;
        }
        while (n--)
                *d++ = *s++;
        return dst;
}

noinline void *memset(void *dst, int c, size_t n) {
        u8 *d = dst;

        for (size_t i = 0; i < n; i++)
                d[i] = (u8) c;
        return dst;
}

noinline int memcmp(const void *a, const void *b, size_t n) {
        const u8 *x = a, *y = b;

        for (size_t i = 0; i < n; i++)
                if (x[i] != y[i])
                        return x[i] < y[i] ? -1 : 1;
        return 0;
}

noinline size_t strnlen(const char *s, size_t max) {
        size_t n = 0;

        while (n < max && s[n])
                n++;
        return n;
}

#define rol32(w, s) (((w) << (s)) | ((w) >> (32 - (s))))

noinline u32 jhash(const void *key, u32 length, u32 initval) {
        const u8 *k = key;
        u32 a, b, c;

        a = b = c = 0xdeadbeef + length + initval;
        while (length > 12) {
                a += k[0] | k[1] << 8 | k[2] << 16 | (u32) k[3] << 24;
                b += k[4] | k[5] << 8 | k[6] << 16 | (u32) k[7] << 24;
                c += k[8] | k[9] << 8 | k[10] << 16 | (u32) k[11] << 24;
                a -= c; a ^= rol32(c, 4); c += b;
                b -= a; b ^= rol32(a, 6); a += c;
                c -= b; c ^= rol32(b, 8); b += a;
                length -= 12;
                k += 12;
        }
        switch (length) {
        case 12: c += (u32) k[11] << 24; /* fall through */
        case 11: c += k[10] << 16;       /* fall through */
        case 10: c += k[9] << 8;         /* fall through */
        case 9: c += k[8];               /* fall through */
        case 8: b += (u32) k[7] << 24;   /* fall through */
        case 7: b += k[6] << 16;         /* fall through */
        case 6: b += k[5] << 8;          /* fall through */
        case 5: b += k[4];               /* fall through */
        case 4: a += (u32) k[3] << 24;   /* fall through */
        case 3: a += k[2] << 16;         /* fall through */
        case 2: a += k[1] << 8;          /* fall through */
        case 1: a += k[0];
                c ^= b; c -= rol32(b, 14);
                a ^= c; a -= rol32(c, 11);
                b ^= a; b -= rol32(a, 25);
                break;
        case 0:
                break;
        }
        return c;
}

noinline struct rb_node *rb_first(struct rb_node *root) {
        struct rb_node *n = root;

        if (!n)
                return NULL;
        while (n->left)
                n = n->left;
        return n;
}

noinline struct rb_node *rb_next(struct rb_node *node) {
        struct rb_node *parent;

        if (node->right) {
                node = node->right;
                while (node->left)
                        node = node->left;
                return node;
        }
        while ((parent = node->parent) && node == parent->right)
                node = parent;
        return parent;
}

static noinline void rb_rotate_left(struct rb_node *x, struct rb_node **root) {
        struct rb_node *y = x->right;

        x->right = y->left;
        if (y->left)
                y->left->parent = x;
        y->parent = x->parent;
        if (!x->parent)
                *root = y;
        else if (x == x->parent->left)
                x->parent->left = y;
        else
                x->parent->right = y;
        y->left = x;
        x->parent = y;
}

static noinline void rb_rotate_right(struct rb_node *x, struct rb_node **root) {
        struct rb_node *y = x->left;

        x->left = y->right;
        if (y->right)
                y->right->parent = x;
        y->parent = x->parent;
        if (!x->parent)
                *root = y;
        else if (x == x->parent->right)
                x->parent->right = y;
        else
                x->parent->left = y;
        y->right = x;
        x->parent = y;
}

noinline void rb_insert_color(struct rb_node *node, struct rb_node **root) {
        struct rb_node *parent, *gparent, *uncle;

        while ((parent = node->parent) && parent->color == 0) {
                gparent = parent->parent;
                if (!gparent)
                        break;
                if (parent == gparent->left) {
                        uncle = gparent->right;
                        if (uncle && uncle->color == 0) {
                                uncle->color = parent->color = 1;
                                gparent->color = 0;
                                node = gparent;
                                continue;
                        }
                        if (node == parent->right) {
                                rb_rotate_left(parent, root);
                                node = parent;
                                parent = node->parent;
                        }
                        parent->color = 1;
                        gparent->color = 0;
                        rb_rotate_right(gparent, root);
                } else {
                        uncle = gparent->left;
                        if (uncle && uncle->color == 0) {
                                uncle->color = parent->color = 1;
                                gparent->color = 0;
                                node = gparent;
                                continue;
                        }
                        if (node == parent->left) {
                                rb_rotate_right(parent, root);
                                node = parent;
                                parent = node->parent;
                        }
                        parent->color = 1;
                        gparent->color = 0;
                        rb_rotate_left(gparent, root);
                }
        }
        (*root)->color = 1;
}

static noinline unsigned long check_user_range(const void *p, unsigned long n) {
        u64 a = (u64) p;

        if (a + n < a || a + n > 0x00007ffffffff000UL)
                return n;
        return 0;
}

noinline unsigned long copy_to_user(void *to, const void *from, unsigned long n) {
        if (check_user_range(to, n))
                return n;
        __asm__ volatile("stac" ::: "memory");
        memcpy(to, from, n);
        __asm__ volatile("clac" ::: "memory");
        return 0;
}

noinline unsigned long copy_from_user(void *to, const void *from, unsigned long n) {
        if (check_user_range(from, n)) {
                memset(to, 0, n);
                return n;
        }
        __asm__ volatile("stac" ::: "memory");
        memcpy(to, from, n);
        __asm__ volatile("clac" ::: "memory");
        return 0;
}

static char log_buf[4096];
static u64 log_next;

static noinline char *format_number(char *p, char *end, u64 v, int base, int width) {
        char tmp[24];
        int i = 0;

        do {
                int d = (int) (v % (u64) base);
                tmp[i++] = (char) (d < 10 ? '0' + d : 'a' + d - 10);
                v /= (u64) base;
        } while (v && i < (int) sizeof tmp);
        while (i < width && i < (int) sizeof tmp)
                tmp[i++] = '0';
        while (i > 0 && p < end)
                *p++ = tmp[--i];
        return p;
}

noinline int printk(const char *fmt, ...) {
        char *p = log_buf + (log_next & 2047), *end = log_buf + sizeof log_buf;
        va_list ap;

        va_start(ap, fmt);
        for (const char *f = fmt; *f && p < end; f++) {
                if (*f != '%') {
                        *p++ = *f;
                        continue;
                }
                switch (*++f) {
                case 'd':
                        p = format_number(p, end, (u64) (s64) va_arg(ap, int), 10, 0);
                        break;
                case 'u':
                        p = format_number(p, end, va_arg(ap, unsigned), 10, 0);
                        break;
                case 'x':
                        p = format_number(p, end, va_arg(ap, unsigned), 16, 0);
                        break;
                case 'l':
                        p = format_number(p, end, va_arg(ap, u64), 16, 16);
                        f++;
                        break;
                case 's': {
                        const char *s = va_arg(ap, const char *);
                        while (*s && p < end)
                                *p++ = *s++;
                        break;
                }
                case '%':
                        *p++ = '%';
                        break;
                default:
                        f--;
                        break;
                }
        }
        va_end(ap);
        log_next += (u64) (p - log_buf);
        return (int) (p - log_buf);
}
