; snapkeys: a guest for the snapshot and replay tests (tests/test_snapshot*.py).
; Loaded at 1000:0100 by the test after the built-in BIOS has started.
; Loops forever: fills a 32 KiB buffer with REP STOSB (a long string
; instruction, so a run can stop in the middle of it), counts passes, and
; echoes every key it reads through INT 16h to the screen (INT 10h AH=0Eh)
; and to a key log.  MOV SS / STI give the test an interrupt shadow to stop in.
        cpu     8086
        org     0x100

start:  mov     ax, cs
        mov     ds, ax
        mov     es, ax
        cli
        mov     ss, ax                  ; interrupts held off for one instruction
        mov     sp, 0xFFFE
        sti
main:   mov     di, buf
        mov     cx, 0x8000
        mov     al, [passes]
        cld
        rep     stosb
        inc     byte [passes]
        mov     ah, 1                   ; a key waiting?
        int     0x16
        jz      main
        mov     ah, 0
        int     0x16
        mov     bx, [keylen]
        and     bx, 63
        mov     [keylog+bx], al
        inc     word [keylen]
        mov     ah, 0x0E                ; echo it
        mov     bx, 7
        int     0x10
        jmp     main

passes: db      0
keylen: dw      0
keylog: times 64 db 0
buf:
