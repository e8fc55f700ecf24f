; ownkbd.asm - a boot sector that drives the keyboard itself (pypc guest test
; program), as an OS with its own keyboard driver does: it never calls
; INT 16h, so the built-in BIOS never sees it wait for a key.
;
;   nasm -f bin -o ownkbd.bin ownkbd.asm      (one 512-byte sector)
;
; It points INT 09h at its own IRQ 1 handler, masks every IRQ but IRQ 1,
; clears the screen and writes "OWN KEYBOARD DRIVER" on row 0 straight into
; the CGA text memory (B800h).  The handler reads each scan code from port
; 60h, acknowledges it by pulsing port 61h bit 7, sends the EOI and puts the
; byte in a 16-byte ring.  The main loop shows every byte from the ring as
; two hex digits and a space, 24 to a row from row 1 on ("1E 9E " is "a"
; pressed and released); after row 24 it starts again at row 1.

        cpu 8086
        org 0x7C00

ROW_BYTES       equ 24              ; bytes shown per row
VRAM            equ 0xB800
ATTR            equ 0x07

start:
        cli
        xor ax, ax
        mov ds, ax
        mov ss, ax
        mov sp, 0x7C00
        cld
        mov word [9 * 4], irq1      ; INT 09h -> our handler
        mov word [9 * 4 + 2], ax
        mov al, 0xFD                ; only IRQ 1 unmasked
        out 0x21, al
        mov ax, VRAM
        mov es, ax
        xor di, di                  ; clear the screen
        mov ax, (ATTR << 8) | ' '
        mov cx, 80 * 25
        rep stosw
        xor di, di                  ; the title on row 0
        mov si, title
        mov ah, ATTR
.title: lodsb
        or al, al
        jz .shown
        stosw
        jmp .title
.shown:
        mov di, 160                 ; bytes from row 1 on
        xor dx, dx                  ; DL: bytes on this row

main:
        cli
        mov bx, [head]
        cmp bx, [tail]
        jne .byte
        sti                         ; STI; HLT: no IRQ slips in between
        hlt
        jmp main
.byte:  sti
        mov al, [ring + bx]
        inc bx
        and bx, 15
        mov [head], bx
        cmp dl, ROW_BYTES           ; row full: next row (row 1 after 24)
        jb .put
        push ax
        mov ax, di
        xor dx, dx
        mov cx, 160
        div cx                      ; AX = this row
        inc ax
        cmp ax, 25
        jb .row
        mov ax, 1
.row:   mul cx
        mov di, ax
        xor dx, dx                  ; DL = 0 bytes on the new row
        pop ax
.put:   call hex8
        mov ax, (ATTR << 8) | ' '
        stosw
        inc dl
        jmp main

; write AL as two hex digits at ES:DI (DI advances by 4)
hex8:
        push ax
        mov ah, al
        mov cl, 4
        shr al, cl
        call .nib
        mov al, ah
        and al, 0x0F
        call .nib
        pop ax
        ret
.nib:   add al, '0'
        cmp al, '9'
        jbe .out
        add al, 'A' - '0' - 10
.out:   push ax
        mov ah, ATTR
        stosw
        pop ax
        ret

irq1:
        push ax
        push bx
        push ds
        xor ax, ax
        mov ds, ax
        in al, 0x60                 ; the scan code
        mov bx, [tail]
        mov [ring + bx], al
        inc bx
        and bx, 15
        mov [tail], bx
        in al, 0x61                 ; acknowledge: pulse port 61h bit 7
        mov ah, al
        or al, 0x80
        out 0x61, al
        mov al, ah
        out 0x61, al
        mov al, 0x20                ; end of interrupt
        out 0x20, al
        pop ds
        pop bx
        pop ax
        iret

title:  db "OWN KEYBOARD DRIVER", 0
head:   dw 0
tail:   dw 0
ring:   times 16 db 0

        times 510 - ($ - $$) db 0
        dw 0xAA55
