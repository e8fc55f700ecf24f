; stepover.asm -- what a debugger's "step over" passes whole (pypc's
; built-in DOS session): a CALL, an INT 21h and a REP MOVSB, then exit 0.
;
; nasm -f bin -o stepover.com stepover.asm

        cpu     8086
        org     100h

start:
        call    sub1                    ; 0100h
        mov     ah, 02h                 ; 0103h
        mov     dl, 'A'
        int     21h                     ; 0107h
        mov     si, src                 ; 0109h
        mov     di, dst
        mov     cx, 5
        cld
        rep     movsb                   ; 0113h
        mov     ax, 4C00h               ; 0115h
        int     21h

sub1:   mov     bx, 1
        call    sub2
        ret
sub2:   inc     bx
        ret

src:    db "hello"
dst:    db "....."
