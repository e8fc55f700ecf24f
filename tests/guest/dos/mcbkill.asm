; mcbkill.asm -- a program that damages its own memory control block and
; ends with INT 20h (pypc).  The built-in DOS must end it anyway (its
; memory is then not freed) and say so in the diagnostics, not raise.
;
; nasm -f bin -o mcbkill.com mcbkill.asm

        cpu     8086
        org     100h

start:
        mov     ah, 09h
        mov     dx, msg
        int     21h
        mov     ax, cs
        dec     ax
        mov     es, ax
        mov     byte [es:0], 'X'        ; the MCB signature: neither 'M' nor 'Z'
        int     20h

msg:    db "damaging my MCB", 13, 10, "$"
