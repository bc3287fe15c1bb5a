/* SPDX-License-Identifier: MIT */
/* Page faults: VMA lookup in an rbtree, then a fault handler chosen by
 * the mapping's operations (anonymous, file-backed, special). */

#include "kernel.h"

static u64 page_pool[64];
static u64 page_pool_next;
static u64 pgfault_count, pgmajfault_count;

noinline struct vm_area_struct *find_vma(struct mm_struct *mm, u64 addr) {
        struct rb_node *node = mm->mm_rb;
        struct vm_area_struct *vma = NULL;

        while (node) {
                struct vm_area_struct *tmp = container_of(node, struct vm_area_struct, vm_rb);

                if (tmp->vm_end > addr) {
                        vma = tmp;
                        if (tmp->vm_start <= addr)
                                break;
                        node = node->left;
                } else
                        node = node->right;
        }
        return vma;
}

static noinline u64 alloc_page(void) {
        u64 i = page_pool_next++ & 63;

        if (!page_pool[i])
                page_pool[i] = 0x100000000UL + (i << 12);
        memset((void *) (page_pool[i] + 0xffff888000000000UL), 0, 64);
        return page_pool[i];
}

static noinline int do_anonymous_page(struct vm_fault *vmf) {
        u64 page = alloc_page();

        if (!page)
                return 0x1; /* VM_FAULT_OOM */
        if (vmf->flags & 1)
                vmf->vma->vm_flags |= 0x100;
        return 0;
}

static noinline int filemap_fault(struct vm_fault *vmf) {
        u64 index = vmf->pgoff + ((vmf->address - vmf->vma->vm_start) >> 12);

        if (index & 7) {
                pgmajfault_count++;
                return 0x4; /* VM_FAULT_MAJOR */
        }
        return 0;
}

static noinline int special_mapping_fault(struct vm_fault *vmf) {
        return vmf->pgoff ? 0x2 : 0;
}

static noinline void special_mapping_open(struct vm_area_struct *vma) {
        vma->vm_flags |= 0x4000;
}

static const struct vm_operations_struct generic_file_vm_ops = {
        .fault = filemap_fault,
};

static const struct vm_operations_struct special_mapping_vmops = {
        .fault = special_mapping_fault,
        .open = special_mapping_open,
};

const struct vm_operations_struct *const vm_ops_table[] = {
        &generic_file_vm_ops,
        &special_mapping_vmops,
};

static noinline int do_wp_page(struct vm_fault *vmf) {
        if (vmf->vma->vm_flags & 0x8)
                return do_anonymous_page(vmf);
        return 0x2; /* VM_FAULT_SIGBUS */
}

static noinline int handle_pte_fault(struct vm_fault *vmf) {
        if (vmf->flags & 2)
                return do_wp_page(vmf);
        if (!vmf->vma->vm_ops)
                return do_anonymous_page(vmf);
        return vmf->vma->vm_ops->fault(vmf);
}

noinline int handle_mm_fault(struct vm_area_struct *vma, u64 address, unsigned int flags) {
        struct vm_fault vmf = {
                .vma = vma,
                .address = address & ~4095UL,
                .flags = flags,
                .pgoff = vma->vm_pgoff,
        };

        pgfault_count++;
        return handle_pte_fault(&vmf);
}

static noinline void bad_area(struct pt_regs *regs, u64 address) {
        printk("segfault at %lx ip %lx\n", address, regs->ip);
}

__used noinline void exc_page_fault(struct pt_regs *regs, u64 address, u64 error_code) {
        struct mm_struct *mm = current->mm;
        struct vm_area_struct *vma;
        int fault;

        if (unlikely(address >= 0xffff800000000000UL)) {
                bad_area(regs, address);
                return;
        }
        vma = find_vma(mm, address);
        if (!vma || vma->vm_start > address) {
                bad_area(regs, address);
                return;
        }
        fault = handle_mm_fault(vma, address, (unsigned) error_code);
        if (fault & 0x3)
                bad_area(regs, address);
        else if (fault & 0x4)
                current->stime += 100;
}
