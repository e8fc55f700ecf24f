; child.asm -- run by parent.com under the built-in DOS (pypc).  Prints its
; command tail and its own path (from the end of its environment), then
; exits with code 42 -- or, when the tail starts with " T", stays resident
; (INT 21h AH=31h, 32 paragraphs, code 3).
;
; nasm -f bin -o child.com child.asm

        cpu     8086
        org     100h

start:
        mov     dx, tailmsg
        mov     ah, 09h
        int     21h
        mov     cl, [80h]
        xor     ch, ch
        mov     si, 81h
.tail:  jcxz    .tailed
        lodsb
        mov     dl, al
        mov     ah, 02h
        int     21h
        dec     cx
        jmp     .tail
.tailed:
        mov     dx, endmsg
        mov     ah, 09h
        int     21h
        ; the environment: strings, an empty one, a count word, our path
        mov     es, [2Ch]
        xor     di, di
.env:   cmp     byte [es:di], 0
        je      .envend
.str:   inc     di
        cmp     byte [es:di], 0
        jne     .str
        inc     di
        jmp     .env
.envend:
        add     di, 3                           ; the empty string, the count word
        mov     dx, pathmsg
        mov     ah, 09h
        int     21h
.path:  mov     dl, [es:di]
        or      dl, dl
        jz      .pathed
        mov     ah, 02h
        int     21h
        inc     di
        jmp     .path
.pathed:
        mov     dx, crlf
        mov     ah, 09h
        int     21h
        cmp     word [81h], "T" * 256 + " "
        je      .resident
        mov     ax, 4C2Ah
        int     21h
.resident:
        mov     dx, 20h
        mov     ax, 3103h
        int     21h

tailmsg:    db "child tail:[$"
endmsg:     db "]", 13, 10, "$"
pathmsg:    db "child path:$"
crlf:       db 13, 10, "$"
