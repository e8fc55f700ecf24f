; fdc_xtchain.asm - a floppy boot sector that boots C: the way a system
; BIOS's INT 19h does: it moves itself to 0000:0600, reads C:'s sector 0
; (INT 13h AH=02h, DL=80h) to 0000:7C00 and jumps there with DL=80h.
; Used with the XT-IDE card's option ROM (plugins/xtide), which answers
; INT 13h for drive 80h.  On failure it stores AX at 0000:0500 and halts.

        cpu 8086
        org 0x7C00

        cli
        xor ax, ax
        mov ds, ax
        mov es, ax
        mov ss, ax
        mov sp, 0x7C00
        sti
        cld
        mov si, 0x7C00
        mov di, 0x0600
        mov cx, 256
        rep movsw
        jmp 0:(0x0600 + cont - $$)
cont:
        mov ax, 0x0201
        mov cx, 0x0001
        mov dx, 0x0080
        mov bx, 0x7C00
        int 0x13
        jc fail
        mov dl, 0x80
        jmp 0:0x7C00
fail:
        mov [0x0500], ax
.h:     hlt
        jmp .h

        times 510 - ($ - $$) db 0
        dw 0xAA55
