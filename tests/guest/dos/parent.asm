; parent.asm -- INT 21h AH=4Bh under the built-in DOS (pypc): run CHILD.COM
; with a command tail and read its exit code (AH=4Dh), load it without
; running it (AL=01h), run it as a TSR, and the failures: no memory left
; (a .COM owns all memory until it shrinks), a missing program, a corrupt
; MZ header (BAD.EXE, made by the test).  Prints "ok"/"FAIL" lines and
; exits with the number of failures.
;
; nasm -f bin -o parent.com parent.asm

        cpu     8086
        org     100h

%include "dosmacros.inc"

start:
        mov     [cmdseg], cs
        mov     [fcbseg1], cs
        mov     [fcbseg2], cs
        mov     ax, 4B00h
        mov     dx, child
        mov     bx, params
        int     21h
        fail_if jnc, "exec before shrinking fails"
        expect  ax, 8, "no memory error"

        mov     sp, stack_top
        mov     bx, (stack_top - $$ + 100h + 15) / 16
        mov     ah, 4Ah
        int     21h
        fail_if jc, "shrink to 4 KiB"

        mov     ax, 4B00h
        mov     dx, child
        mov     bx, params
        int     21h
        fail_if jc, "exec CHILD.COM"
        mov     ax, cs
        mov     ds, ax
        mov     es, ax
        mov     ah, 4Dh
        int     21h
        expect  ax, 002Ah, "child exit code 42"
        mov     ah, 62h
        int     21h
        mov     ax, cs
        expect  bx, ax, "our PSP is current again"

        ; load without running
        mov     ax, 4B01h
        mov     dx, child
        mov     bx, params
        int     21h
        fail_if jc, "load only"
        mov     ah, 62h
        int     21h
        mov     [childpsp], bx
        mov     ax, cs
        cmp     bx, ax
        fail_if je, "the child's PSP is current"
        expect  word [params + 12h], 100h, "entry IP"
        expect  word [params + 14h], bx, "entry CS is the child's PSP"
        mov     es, bx
        expect  byte [es:100h], 0BAh, "child code loaded"
        mov     bx, cs
        mov     ah, 50h
        int     21h
        mov     es, [childpsp]
        mov     es, [es:2Ch]
        mov     ah, 49h
        int     21h
        fail_if jc, "free the child's environment"
        mov     es, [childpsp]
        mov     ah, 49h
        int     21h
        fail_if jc, "free the child"
        mov     ax, cs
        mov     es, ax

        ; a resident child
        mov     ax, 4B00h
        mov     dx, child
        mov     bx, tsrparams
        mov     [tsrseg], cs
        int     21h
        fail_if jc, "exec a TSR"
        mov     ax, cs
        mov     ds, ax
        mov     es, ax
        mov     ah, 4Dh
        int     21h
        expect  ax, 0303h, "TSR exit type and code"

        ; failures
        mov     ax, 4B00h
        mov     dx, missing
        mov     bx, params
        int     21h
        fail_if jnc, "exec a missing program fails"
        expect  ax, 2, "file not found"
        mov     ax, 4B00h
        mov     dx, bad
        mov     bx, params
        int     21h
        fail_if jnc, "exec a corrupt EXE fails"
        expect  ax, 0Bh, "bad format"

        mov     al, [failures]
        mov     ah, 4Ch
        int     21h

%include "dosio.inc"

failures:   db 0
childpsp:   dw 0
child:      db "CHILD.COM", 0
missing:    db "NOSUCH.COM", 0
bad:        db "BAD.EXE", 0
tail:       db 12, " hello world", 13
tsrtail:    db 2, " T", 13
params:     dw 0                        ; environment: a copy of ours
            dw tail
cmdseg:     dw 0
            dw 5Ch
fcbseg1:    dw 0
            dw 6Ch
fcbseg2:    dw 0
            times 8 db 0                ; SS:SP, CS:IP (load only)
tsrparams:  dw 0
            dw tsrtail
tsrseg:     dw 0
            dw 0, 0, 0, 0
            align 2
            times 256 db 0
stack_top:
