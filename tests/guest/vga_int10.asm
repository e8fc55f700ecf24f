; vga_int10.asm - the VGA's INT 10h (pypc guest test program)
;
; Sets modes 13h, 12h, 3, 0Dh, 0Eh, 10h, 4 and 6 through INT 10h AH=00h and
; draws in each with the BIOS and with plain memory writes; between modes it
; stops (`sync`) so the test can compare the picture.
;
; Results (word slots at 0610h + 2*n):
;   0  AL returned by AH=00h for mode 13h (20h)
;   1  AX of AH=0Fh in mode 13h (2813h)
;   2  DH (red) of AH=10h/15h for DAC entry 1 after AH=10h/10h set it (003Fh)
;   3  CX (green:blue) of the same (0000h)
;   4  AL of AH=0Dh at (300,190) after AH=0Ch wrote C8h there (00C8h)
;   5  AX of AH=0Fh in mode 12h (5012h)
;   6  AL of AH=0Dh at (605,400) (0005h)
;   7  BX of AH=1Ah AL=00h (0008h: VGA, colour)      8  AL of it (001Ah)
;   9  BX of AH=12h BL=10h (0003h: colour, 256 KiB)
;  10  CX of AX=1130h BH=06h (0010h: 16-line font)    11  DL of it (001Dh: 30 rows)
;  12  AL of AH=1Bh (001Bh)                           13  mode byte of its table (0012h)
;  14  colours word of its table (0010h)
;  15  AH=12h BL=10h CL (switches, 0009h)
;  16  rows - 1 in the BIOS data area after AX=1112h in mode 3 (0031h: 50 rows)
;  17  char height in the BIOS data area after it (0008h)
;  18  AX of AH=08h at page 1 row 1 col 2 (2F50h)
;  19  AX of AH=0Fh in mode 0Dh (280Dh)   20  in mode 0Eh (500Eh)
;  21  in mode 10h (5010h)                22  in mode 4 (2804h)   23 in mode 6 (5006h)
;  24  AL of AH=0Dh at (9,6) in mode 10h (0003h)
;  25-28  AX of AH=0Fh in modes 0, 1, 2, 5 (2800h, 2801h, 5002h, 2805h)
; Phases: 1 mode 13h drawn, 2 mode 12h, 3 text page 1 shown, 4 text with the
; 8x8 font (50 rows), 5 mode 0Dh, 6 mode 0Eh, 7 mode 10h, 8 mode 4, 9 mode 6,
; 10-12 modes 0, 1, 2 with "MODE n" written by teletype, 13 mode 5 (pixels
; as in mode 4).

        cpu 8086
        org 0x7C00
%include "common.inc"
%include "vgacommon.inc"

main:
        ; ---------------- mode 13h ------------------------------------------
        mov ax, 0x0013
        int 0x10
        xor ah, ah
        res 0
        mov ah, 0x0F
        int 0x10
        res 1
        ; pixel (x, y) = (x + y) mod 256, written as plain bytes
        mov ax, 0xA000
        mov es, ax
        xor di, di
        xor dx, dx
.y13:   mov al, dl
        mov cx, 320
.x13:   stosb
        inc al
        loop .x13
        inc dx
        cmp dx, 200
        jne .y13
        xor ax, ax
        mov es, ax
        ; DAC entry 1 := (63, 0, 0) and read it back
        mov ax, 0x1010
        mov bx, 1
        mov dh, 63
        xor cx, cx
        int 0x10
        mov ax, 0x1015
        mov bx, 1
        xor dx, dx
        mov cx, 0xFFFF
        int 0x10
        mov al, dh
        xor ah, ah
        res 2
        mov [SLOT(3)], cx
        mov ax, 0x0CC8              ; pixel (300, 190) := C8h
        mov cx, 300
        mov dx, 190
        xor bh, bh
        int 0x10
        mov ah, 0x0D
        int 0x10
        xor ah, ah
        res 4
        sync 1

        ; ---------------- mode 12h ------------------------------------------
        mov ax, 0x0012
        int 0x10
        mov ah, 0x0F
        int 0x10
        res 5
        mov si, msg12               ; "VGA12" in yellow at row 0
.t12:   lodsb
        or al, al
        jz .p12
        mov ah, 0x0E
        mov bx, 0x000E
        int 0x10
        jmp .t12
.p12:   mov cx, 600                 ; pixels of colours 1..15 at (601..615, 400)
        mov dx, 400
        mov al, 1
        mov ah, 0x0C
        xor bh, bh
.pix:   inc cx
        int 0x10
        inc al
        cmp al, 16
        jne .pix
        mov ax, 0x0D00
        mov cx, 605
        int 0x10
        xor ah, ah
        res 6
        ; a 64x50 rectangle of colour 9 at (64, 100) in write mode 2
        outi 0x3CE, 5, 2
        mov ax, 0xA000
        mov es, ax
        mov di, 100 * 80 + 8
        mov bx, 50
.r12:   mov cx, 8
        mov al, 9
        rep stosb
        add di, 80 - 8
        dec bx
        jnz .r12
        outi 0x3CE, 5, 0
        xor ax, ax
        mov es, ax
        ; information services
        mov ax, 0x1A00
        int 0x10
        mov [SLOT(7)], bx
        xor ah, ah
        res 8
        mov ah, 0x12
        mov bl, 0x10
        int 0x10
        mov [SLOT(9)], bx
        mov al, cl
        xor ah, ah
        res 15
        push es
        mov ax, 0x1130
        mov bh, 6
        int 0x10
        pop es
        mov [SLOT(10)], cx
        mov al, dl
        xor ah, ah
        res 11
        mov ax, 0x1B00
        xor bx, bx
        mov di, 0x0700
        int 0x10
        xor ah, ah
        res 12
        mov al, [0x0704]
        res 13
        mov ax, [0x0700 + 0x27]
        res 14
        sync 2

        ; ---------------- mode 3: pages, AH=09h/13h, fonts -----------------
        mov ax, 0x0003
        int 0x10
        mov ah, 0x02                ; 'X' x5 in yellow on blue at (2, 10)
        xor bh, bh
        mov dx, 0x020A
        int 0x10
        mov ax, 0x0958
        mov bx, 0x001E
        mov cx, 5
        int 0x10
        mov ax, 0x1301              ; "Hello VGA" white on red at (4, 0)
        mov bx, 0x004F
        mov cx, msg_hello_len
        mov dx, 0x0400
        mov bp, msg_hello
        int 0x10
        mov ax, 0x0501              ; show page 1 and write on it
        int 0x10
        mov ah, 0x02
        mov bh, 1
        mov dx, 0x0102
        int 0x10
        mov ax, 0x0950
        mov bx, 0x012F
        mov cx, 3
        int 0x10
        mov ah, 0x08
        mov bh, 1
        int 0x10
        res 18
        sync 3
        mov ax, 0x0500              ; back to page 0, then the 8x8 font
        int 0x10
        mov ax, 0x1112
        xor bl, bl
        int 0x10
        mov al, [0x0484]
        xor ah, ah
        res 16
        mov ax, [0x0485]
        res 17
        mov ax, 0x1300              ; "Row 48" at (48, 0), grey
        mov bx, 0x0007
        mov cx, 6
        mov dx, 0x3000
        mov bp, msg_row
        int 0x10
        sync 4

        ; ---------------- 0Dh, 0Eh, 10h, 4, 6 ------------------------------
        mov al, 0x0D
        mov bl, 19
        call gmode
        sync 5
        mov al, 0x0E
        mov bl, 20
        call gmode
        sync 6
        mov al, 0x10
        mov bl, 21
        call gmode
        mov ax, 0x0D00
        mov cx, 9
        mov dx, 6
        xor bh, bh
        int 0x10
        xor ah, ah
        res 24
        sync 7
        mov al, 0x04
        mov bl, 22
        call gmode
        sync 8
        mov al, 0x06
        mov bl, 23
        call gmode
        sync 9
        mov al, 0x00
        mov bl, 25
        call tmode
        sync 10
        mov al, 0x01
        mov bl, 26
        call tmode
        sync 11
        mov al, 0x02
        mov bl, 27
        call tmode
        sync 12
        mov al, 0x05
        mov bl, 28
        call gmode
        sync 13
        mov si, nothing
        jmp finish

; set text mode AL, store AH=0Fh's AX in slot BL, teletype "MODE n"
tmode:
        push ax
        xor ah, ah
        int 0x10
        mov ah, 0x0F
        int 0x10
        xor bh, bh
        shl bx, 1
        mov [RES_BASE + bx], ax
        mov si, msg_mode
        call print
        pop ax
        add al, '0'
        call putc
        ret

; set mode AL, store AH=0Fh's AX in slot BL, draw pixel i in colour i at
; (3i, 2i) for i = 1..15 with AH=0Ch
gmode:
        xor ah, ah
        int 0x10
        mov ah, 0x0F
        int 0x10
        xor bh, bh
        shl bx, 1
        mov [RES_BASE + bx], ax
        mov al, 1
        mov cx, 3
        mov dx, 2
        xor bh, bh
.p:     mov ah, 0x0C
        int 0x10
        add cx, 3
        add dx, 2
        inc al
        cmp al, 16
        jne .p
        ret

msg12:      db "VGA12", 0
msg_hello:  db "Hello VGA"
msg_hello_len equ $ - msg_hello
msg_row:    db "Row 48"
msg_mode:   db "MODE ", 0
nothing:    db 0

%include "tail.inc"
