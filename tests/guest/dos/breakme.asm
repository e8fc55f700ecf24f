; breakme.asm -- how a DOS program meets Ctrl-Break (pypc's graceful
; session.stop).  The first letter of the command tail picks the behaviour:
;
;   d (default)  wait for keys with INT 21h AH=08h, no handler of its own:
;                the DOS's INT 23h ends it (exit code 0, type 1 = Ctrl-C)
;   h            the same wait with its own INT 23h handler, which prints
;                "caught Ctrl-Break" and exits with code 23
;   i            the same wait with an INT 23h handler that only IRETs:
;                the DOS starts the read again, the break is ignored
;   b            its own INT 1Bh handler (the BIOS calls it as the key
;                comes) sets a flag; the main loop makes no DOS call, sees
;                the flag, puts the old vector back and exits with code 27
;   s            spins with interrupts on and makes no DOS call
;   m            masks IRQ 1 at the PIC and spins: no key ever arrives
;   c            CLI, HLT: nothing runs again (no NMI)
;
; It prints "ready" first, so a test can see it has started.
;
; nasm -f bin -o breakme.com breakme.asm

        cpu     8086
        org     100h

start:
        mov     dx, ready
        mov     ah, 09h
        int     21h
        mov     si, 81h                 ; the command tail
.skip:  lodsb
        cmp     al, ' '
        je      .skip
        or      al, 20h                 ; lower case (CR becomes 2Dh: default)
        cmp     al, 'h'
        je      own_handler
        cmp     al, 'i'
        je      ignore
        cmp     al, 'b'
        je      hook_1bh
        cmp     al, 's'
        je      spin
        cmp     al, 'm'
        je      masked
        cmp     al, 'c'
        je      halted

read_keys:                              ; mode d, and the wait of h and i
        mov     ah, 08h
        int     21h
        jmp     read_keys

own_handler:
        mov     dx, on_break
        jmp     set_23h
ignore:
        mov     dx, just_iret
set_23h:
        mov     ax, 2523h               ; DS = CS in a .COM
        int     21h
        jmp     read_keys

on_break:                               ; INT 23h: say so, end with code 23
        push    cs
        pop     ds
        mov     dx, caught
        mov     ah, 09h
        int     21h
        mov     ax, 4C17h
        int     21h

just_iret:
        iret

hook_1bh:
        mov     ax, 351Bh
        int     21h
        mov     [old_1bh], bx
        mov     [old_1bh + 2], es
        mov     dx, on_1bh
        mov     ax, 251Bh
        int     21h
.wait:  cmp     byte [flag], 0          ; no DOS call in the loop
        je      .wait
        push    ds
        lds     dx, [old_1bh]
        mov     ax, 251Bh
        int     21h
        pop     ds
        mov     ax, 4C1Bh
        int     21h

on_1bh:                                 ; INT 1Bh: remember the break
        mov     byte [cs:flag], 1
        iret

spin:   jmp     spin

masked: in      al, 21h
        or      al, 02h
        out     21h, al
.loop:  jmp     .loop

halted: cli
        hlt
        jmp     halted

ready:  db "ready", 13, 10, "$"
caught: db "caught Ctrl-Break", 13, 10, "$"
flag:   db 0
old_1bh: dd 0
