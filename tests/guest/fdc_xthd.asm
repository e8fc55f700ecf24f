; fdc_xthd.asm - the boot sector of the hard disk in the XT-IDE test: booted
; from C: (DL=80h) through the card's option ROM, it checks INT 13h on its
; own drive and leaves the results at 0000:0500:
;   0500 DL at entry (80h)          0502 CX of AH=08h    0504 DX of AH=08h
;   0506 AX of AH=15h               0508 CX:DX of AH=15h (two words, 0508/050A)
;   050C AX of AH=03h (write 2 sectors from 0000:8000 to C0 H1 S2)
;   050E AX of AH=02h (read them back to 0000:9000)
;   0510 AX of AH=02h of sector 63 (error expected)   0512 CF of it
;   0514 AX of AH=01h right after
;   0516 4F4Bh "OK" when done

        cpu 8086
        org 0x7C00

        xor ax, ax
        mov ds, ax
        mov es, ax
        mov [0x0500], dx
        mov ah, 0x08
        mov dl, 0x80
        int 0x13
        mov [0x0502], cx
        mov [0x0504], dx
        xor ax, ax
        mov es, ax
        mov ah, 0x15
        mov dl, 0x80
        int 0x13
        mov [0x0506], ax
        mov [0x0508], cx
        mov [0x050A], dx
        ; two sectors of a pattern
        mov di, 0x8000
        mov cx, 512
        mov ax, 0x4B48              ; "HK"
        rep stosw
        mov ax, 0x0302
        mov cx, 0x0002
        mov dx, 0x0180
        mov bx, 0x8000
        int 0x13
        mov [0x050C], ax
        mov ax, 0x0202
        mov cx, 0x0002
        mov dx, 0x0180
        mov bx, 0x9000
        int 0x13
        mov [0x050E], ax
        mov ax, 0x0201
        mov cx, 0x003F
        mov dx, 0x0080
        mov bx, 0x9800
        int 0x13
        mov [0x0510], ax
        mov ax, 0
        adc ax, 0
        mov [0x0512], ax
        mov ah, 0x01
        mov dl, 0x80
        int 0x13
        mov [0x0514], ax
        mov word [0x0516], 0x4B4F
.h:     hlt
        jmp .h

        times 510 - ($ - $$) db 0
        dw 0xAA55
