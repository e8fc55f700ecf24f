; square.asm -- a tiny program for `pypc batch` (pypc's built-in DOS):
; reads a decimal number N (0-255) from its command tail, prints
; "N squared is M" on the console, writes the same line to RESULT.TXT in
; the current folder, and exits with code N.  A tail that is not such a
; number prints "not a number" and exits with 255; the tail "loop" never
; ends (a job that runs forever).
;
; nasm -f bin -o square.com square.asm

        cpu     8086
        org     100h

start:
        mov     si, 81h
        mov     cl, [80h]
        xor     ch, ch
        xor     bx, bx                  ; N
        xor     di, di                  ; digits seen
.skip:  jcxz    .done
        lodsb
        dec     cx
        cmp     al, ' '
        je      .skip
        cmp     al, 'l'
        je      forever
.digit: cmp     al, '0'
        jb      bad
        cmp     al, '9'
        ja      bad
        sub     al, '0'
        xor     ah, ah
        push    ax
        mov     ax, bx
        mov     dx, 10
        mul     dx
        pop     dx
        add     ax, dx
        mov     bx, ax
        cmp     bx, 255
        ja      bad
        inc     di
        jcxz    .done
        lodsb
        dec     cx
        cmp     al, 0Dh
        je      .done
        jmp     .digit
.done:  test    di, di
        jz      bad
        ; the line: N " squared is " N*N CR LF
        mov     di, line
        mov     ax, bx
        call    decimal
        mov     si, middle
        mov     cx, middle_len
        rep     movsb
        mov     ax, bx
        mul     bx
        call    decimal
        mov     ax, 0A0Dh
        stosw
        mov     cx, di
        sub     cx, line
        mov     [len], cx
        mov     dx, line                ; console (handle 1)
        mov     bx, 1
        mov     ah, 40h
        int     21h
        mov     dx, fname               ; RESULT.TXT
        xor     cx, cx
        mov     ah, 3Ch
        int     21h
        jc      .exit
        mov     bx, ax
        mov     dx, line
        mov     cx, [len]
        mov     ah, 40h
        int     21h
        mov     ah, 3Eh
        int     21h
.exit:  mov     al, [line_n]
        mov     ah, 4Ch
        int     21h

; AX as decimal at ES:DI (DI advances); the first call also keeps N
decimal:
        push    bx
        mov     [line_n], al
        xor     cx, cx
        mov     bx, 10
.div:   xor     dx, dx
        div     bx
        push    dx
        inc     cx
        test    ax, ax
        jnz     .div
.put:   pop     ax
        add     al, '0'
        stosb
        loop    .put
        pop     bx
        mov     al, bl                  ; N again (the caller's BX)
        mov     [line_n], al
        ret

bad:    mov     dx, badmsg
        mov     ah, 09h
        int     21h
        mov     ax, 4CFFh
        int     21h

forever:
        jmp     forever

middle:     db      " squared is "
middle_len  equ     $ - middle
badmsg:     db      "not a number", 13, 10, "$"
fname:      db      "RESULT.TXT", 0
line_n:     db      0
len:        dw      0
line:       times 32 db 0
