; sysfn.asm -- more INT 21h services of the built-in DOS (pypc): parse a
; file name into an FCB (29h), country information (38h), the InDOS flag
; (34h), the handle count (67h: 15 free handles by default, more after
; raising it), Ctrl-C through a program's own INT 23h handler (the test
; types Ctrl-C then "k" at an AH=01h read).  Prints "ok"/"FAIL" lines and
; exits with the number of failures.
;
; nasm -f bin -o sysfn.com sysfn.asm

        cpu     8086
        org     100h

%include "dosmacros.inc"

start:
        mov     sp, stack_top                   ; give memory back: 67h allocates
        mov     bx, (stack_top - $$ + 100h + 15) / 16
        mov     ah, 4Ah
        int     21h
        fail_if jc, "shrink to our size"

        ; -- 29h ------------------------------------------------------------
        mov     si, text1
        mov     di, fcb
        mov     ax, 2901h
        int     21h
        expect  al, 1, "parse: wildcards seen"
        expect  byte [fcb], 3, "parse: drive C"
        push    si
        mov     si, fcb + 1
        mov     di, want1
        mov     cx, 11
        repe    cmpsb
        pop     si
        fail_if jne, "parse: FCB name"
        expect  byte [si], ' ', "parse: SI after the name"
        mov     si, text2
        mov     di, fcb
        mov     ax, 2900h
        int     21h
        expect  al, 0FFh, "parse: unknown drive"

        ; -- 38h, 34h ------------------------------------------------------
        mov     ax, 3800h
        mov     dx, country
        int     21h
        fail_if jc, "country information"
        expect  bx, 1, "country USA"
        expect  byte [country + 2], '$', "currency"
        expect  byte [country + 9], '.', "decimal separator"
        mov     ah, 34h
        int     21h
        expect  byte [es:bx], 0, "InDOS flag"
        push    ds
        pop     es

        ; -- handle count --------------------------------------------------
        xor     bp, bp
.open1: mov     ax, 3D00h
        mov     dx, nul
        int     21h
        jc      .full1
        inc     bp
        cmp     bp, 40
        jb      .open1
.full1: expect  bp, 15, "15 free handles"
        expect  ax, 4, "too many open files"
        mov     bx, 30
        mov     ah, 67h
        int     21h
        fail_if jc, "set handle count 30"
        expect  word [32h], 30, "PSP handle count"
        xor     bp, bp
.open2: mov     ax, 3D00h
        mov     dx, nul
        int     21h
        jc      .full2
        inc     bp
        cmp     bp, 40
        jb      .open2
.full2: expect  bp, 10, "10 more handles"

        ; -- Ctrl-C through our INT 23h handler ----------------------------
        mov     dx, on_break
        mov     ax, 2523h
        int     21h
        mov     ah, 01h
        int     21h
        expect  al, 'k', "the read goes on after Ctrl-C"
        expect  byte [breaks], 1, "our INT 23h ran once"

        mov     al, [failures]
        mov     ah, 4Ch
        int     21h

on_break:
        inc     byte [cs:breaks]
        iret

%include "dosio.inc"

failures:   db 0
breaks:     db 0
text1:      db "c:file*.t? rest", 13
want1:      db "FILE????T? "
text2:      db "q:x.y", 13
nul:        db "NUL", 0
fcb:        times 37 db 0
country:    times 34 db 0
            align 2
            times 256 db 0
stack_top:
