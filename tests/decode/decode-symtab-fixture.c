/* SPDX-License-Identifier: MIT */

/* Symbols nested and overlapping in the ways compilers rarely emit and
 * hand-written assembly does, for test-decode-symtab (never run): a
 * global symbol around a closer weak or local one (in both table
 * orders), symbols sharing a start with other sizes and bindings, and
 * labels without size in and after them. */

__asm__(".text\n"
        /* Closer weak symbol defined (and so listed) before the global around it. */
        ".weak inner_first_weak\n.type inner_first_weak, @function\n"
        ".globl outer_second_global\n.type outer_second_global, @function\n"
        ".p2align 4\n"
        "pad_a: nop\n nop\n nop\n nop\n"
        "inner_first_weak: nop\n nop\n nop\n nop\n.size inner_first_weak, 4\n"
        " nop\n nop\n"
        /* The global starts before the weak one but is defined after it. */
        ".set outer_second_global, pad_a\n.size outer_second_global, 16\n"
        /* The reverse: global first, weak inside after it. */
        ".globl outer_first_global\n.type outer_first_global, @function\n"
        "outer_first_global: nop\n nop\n nop\n nop\n"
        ".weak inner_second_weak\n.type inner_second_weak, @function\n"
        "inner_second_weak: nop\n nop\n.size inner_second_weak, 2\n"
        " nop\n nop\n.size outer_first_global, 8\n"
        /* One start, other sizes and bindings. */
        ".weak same_weak_long\n.type same_weak_long, @function\n"
        ".globl same_global_short\n.type same_global_short, @function\n"
        ".type same_local_mid, @function\n"
        "same_weak_long:\nsame_global_short:\nsame_local_mid:\n"
        " nop\n nop\n nop\n nop\n nop\n nop\n nop\n nop\n"
        ".size same_global_short, 2\n.size same_local_mid, 4\n.size same_weak_long, 8\n"
        /* A longer global before a shorter weak one at one start. */
        ".globl tie_global_long\n.type tie_global_long, @function\n"
        ".weak tie_weak_short\n.type tie_weak_short, @function\n"
        "tie_global_long:\ntie_weak_short:\n nop\n nop\n nop\n nop\n"
        ".size tie_weak_short, 2\n.size tie_global_long, 4\n"
        /* Labels without size: a global one and a local one at one
         * address, a local one inside a sized local, then one past it. */
        ".globl label_global\nlabel_global:\nlabel_local:\n nop\n nop\n"
        ".type sized_local, @function\nsized_local: nop\n"
        "label_inside: nop\n nop\n.size sized_local, 3\n"
        "label_after: nop\n nop\n"
        ".globl label_weak_too\n.weak label_weak_too\nlabel_weak_too: nop\n"
        "ret\n");

int main(void) {
        return 0;
}
