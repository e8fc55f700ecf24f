; guestdos.asm -- INT 21h served by guest code, for dos.trace on a DOS that
; is not pypc's built-in one (tests/test_dos_trace.py).  A flat binary
; loaded at 1000:0000 and entered there on a machine with the built-in
; BIOS and no DOS: it points INT 21h at a small handler of its own (a few
; functions, as a DOS would answer them), then makes its calls:
;
;   3Dh open MISSING.DAT (CF=1, AX=2), 3Ch create NEW.DAT (handle 5), 1Ah
;   set the DTA, 3Fh read 8 from handle 5 (gets "DATA"), 02h console
;   output (not recorded), 4Eh find *.DAT (NEW.DAT in the DTA), 3Eh close
;   handle 5 through a far call to the handler (as a TSR chaining INT 21h
;   does), 4Ch exit 3 (the handler goes to "done" and never returns).
;
; The test starts its trace at "ready" and stops on "done", whose offsets
; are the words at 0002h and 0004h (the handler's at 0006h; at 0008h
; "end20", an INT 20h the test runs last).  Interrupts stay off throughout.
;
; nasm -f bin -o guestdos.bin guestdos.asm

        cpu     8086
        org     0

        jmp     short start
        dw      ready, done, dos21, end20

start:
        cli
        xor     ax, ax
        mov     ds, ax
        mov     word [21h * 4], dos21
        mov     [21h * 4 + 2], cs
        mov     word [20h * 4], dos20
        mov     [20h * 4 + 2], cs
        mov     ax, cs
        mov     ds, ax
        mov     es, ax
        mov     ss, ax
        mov     sp, stack_top
        mov     [vec21 + 2], cs
ready:
        mov     ax, 3D00h               ; open a missing file: error 2
        mov     dx, missing
        int     21h
        mov     ah, 3Ch                 ; create: handle 5
        xor     cx, cx
        mov     dx, newfile
        int     21h
        mov     ah, 1Ah                 ; set the DTA
        mov     dx, dta
        int     21h
        mov     ah, 3Fh                 ; read 8 bytes: 4 come
        mov     bx, 5
        mov     cx, 8
        mov     dx, buf
        int     21h
        mov     ah, 02h                 ; console output
        mov     dl, "*"
        int     21h
        mov     ah, 4Eh                 ; find *.DAT
        xor     cx, cx
        mov     dx, pattern
        int     21h
        mov     ah, 3Eh                 ; close handle 5, by a far call
        mov     bx, 5
        pushf
        call    far [vec21]
        mov     ax, 4C03h               ; exit 3
        int     21h
        jmp     done
end20:                                  ; the test's second way out
        int     20h
        jmp     done

; -- the "DOS" --------------------------------------------------------------
dos21:
        cmp     ah, 3Dh
        je      .open
        cmp     ah, 3Ch
        je      .create
        cmp     ah, 1Ah
        je      .setdta
        cmp     ah, 3Fh
        je      .read
        cmp     ah, 4Eh
        je      .find
        cmp     ah, 3Eh
        je      .close
        cmp     ah, 4Ch
        je      done
        iret                            ; anything else: nothing to do
.open:
        mov     ax, 2
        stc
        retf    2
.create:
        mov     ax, 5
        clc
        retf    2
.setdta:
        mov     [cs:dtaoff], dx
        mov     [cs:dtaseg], ds
        iret
.read:
        push    si
        push    di
        push    es
        push    ds
        pop     es
        mov     di, dx
        mov     si, data4
        cs movsw
        cs movsw
        pop     es
        pop     di
        pop     si
        mov     ax, 4
        clc
        retf    2
.find:
        push    si
        push    di
        push    es
        les     di, [cs:dtaoff]
        mov     byte [es:di + 21], 20h          ; attributes: archive
        mov     word [es:di + 22], 0            ; time
        mov     word [es:di + 24], 0            ; date
        mov     word [es:di + 26], 4            ; size
        mov     word [es:di + 28], 0
        add     di, 30
        mov     si, found
        mov     cx, foundlen
        cs rep movsb
        pop     es
        pop     di
        pop     si
        xor     ax, ax
        clc
        retf    2
.close:
        clc
        retf    2

dos20:                                  ; INT 20h: the program ends
        jmp     done

done:
        jmp     done

missing:    db "MISSING.DAT", 0
newfile:    db "NEW.DAT", 0
pattern:    db "*.DAT", 0
found:      db "NEW.DAT", 0
foundlen    equ $ - found
data4:      db "DATA"
vec21:      dw dos21, 0
dtaoff:     dw 0
dtaseg:     dw 0
buf:        times 8 db 0
dta:        times 43 db 0
            times 128 db 0
stack_top:
