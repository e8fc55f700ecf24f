; hold.asm -- keep DATA.TXT open across a key press (pypc).  Opens
; DATA.TXT for reading and writing, prints its first 8 bytes, waits for a
; key (AH=08h: a snapshot is taken here), then appends "+" at the end,
; reads the first 8 bytes again, prints them and exits 0 (1 on any error).
;
; nasm -f bin -o hold.com hold.asm

        cpu     8086
        org     100h

start:
        mov     ax, 3D02h
        mov     dx, name
        int     21h
        jc      .fail
        mov     [handle], ax
        call    show
        mov     ah, 08h                 ; wait for a key
        int     21h
        mov     ax, 4202h               ; to the end
        mov     bx, [handle]
        xor     cx, cx
        xor     dx, dx
        int     21h
        jc      .fail
        mov     ah, 40h
        mov     bx, [handle]
        mov     cx, 1
        mov     dx, plus
        int     21h
        jc      .fail
        call    show
        mov     ah, 3Eh
        mov     bx, [handle]
        int     21h
        mov     ax, 4C00h
        int     21h
.fail:
        mov     ah, 09h
        mov     dx, failed
        int     21h
        mov     ax, 4C01h
        int     21h

; print "data:" and the first 8 bytes of the file
show:
        mov     ax, 4200h
        mov     bx, [handle]
        xor     cx, cx
        xor     dx, dx
        int     21h
        mov     ah, 3Fh
        mov     bx, [handle]
        mov     cx, 8
        mov     dx, buf
        int     21h
        mov     ah, 09h
        mov     dx, label
        int     21h
        ret

name:   db "DATA.TXT", 0
plus:   db "+"
failed: db "hold: DOS error", 13, 10, "$"
label:  db "data:"
buf:    db "        ", 13, 10, "$"
handle: dw 0
