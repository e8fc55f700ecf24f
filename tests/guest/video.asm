; video.asm - INT 10h and the CGA through its ports (pypc guest test program)
;
; Mode 4 first: get mode, pixels written with AH=0Ch and read back with
; AH=0Dh and from video RAM, a teletype 'G' read back with AH=08h; then it
; waits for a key (INT 16h) so the test can check the rendered frame.
; Then mode 3: AH=09h/08h, teletype with scrolling past row 24, AH=06h
; window scroll, AH=0Fh, AH=03h; vertical-retrace edges of 3DAh counted
; over 10 BIOS ticks, display-enable edges counted over one frame; a
; summary on screen; finally the cursor is moved by writing CRTC R14/R15
; directly (3D4h/3D5h) and read back.
;
; Results (word slots at 0610h + 2*n):
;   0  AX of AH=0Fh in mode 4 (expect 2804h: 40 columns, mode 4)
;   1  pixel (100,50) read with AH=0Dh (expect 1)
;   2  pixel (101,50) (expect 2)         3  pixel (102,50) (expect 3)
;   4  pixel (103,51) (expect 2)
;   5  VRAM byte B800:07E9h (low) and B800:27E9h (high) (expect 026Ch)
;   6  AL of AH=08h at row 0 col 0 in mode 4 after a teletype 'G' (47h)
;   7  AX of AH=0Fh in mode 3 (expect 5003h)
;   8  BH of AH=0Fh in mode 3 (active page, expect 0)
;   9  AX of AH=08h on the AH=09h cells (expect 1E58h: 'X' on yellow/blue)
;   10 DX of AH=03h after the teletype lines (expect 1800h: row 24, col 0)
;   11 AX of AH=08h on the window line the scroll blanked, row 12 col 12
;      (expect 4F20h)
;   12 AX of AH=08h at row 10 col 12 (expect 0748h: 'H' moved up)
;   13 vertical-sync rising edges of 3DAh bit 3 during 10 ticks (~33)
;   14 rising edges of 3DAh bit 0 from the end of one vsync to the next
;      vsync start: one per displayed line (expect 200)
;   15 CRTC R14:R15 read back through 3D5h (expect 0251h: row 7 col 33)
;   16 AX of AH=08h at row 11 col 5 (outside the window, expect 0741h)
; Phases: 1 = mode 4 drawn, waiting for a key; 2 = mode 3 part running.

        cpu 8086
        org 0x7C00
%include "common.inc"

main:
        ; ---------------- mode 4: 320x200x4 -----------------------------
        mov ax, 0x0004
        int 0x10
        mov ah, 0x0F
        int 0x10
        mov [SLOT(0)], ax
        mov ax, 0x0C01              ; pixels
        mov cx, 100
        mov dx, 50
        xor bh, bh
        int 0x10
        mov ax, 0x0C02
        inc cx
        int 0x10
        mov ax, 0x0C03
        inc cx
        int 0x10
        mov ax, 0x0C02
        inc cx
        inc dx
        int 0x10
        ; a filled 16x8 block of colour 3 at x 160..175, y 100..107
        mov dx, 100
.by:    mov cx, 160
.bx:    mov ax, 0x0C03
        int 0x10
        inc cx
        cmp cx, 176
        jb .bx
        inc dx
        cmp dx, 108
        jb .by
        ; read the four pixels back
        mov di, SLOT(1)
        mov cx, 100
        mov dx, 50
.rp:    mov ah, 0x0D
        int 0x10
        xor ah, ah
        mov [di], ax
        add di, 2
        inc cx
        cmp cx, 103
        jb .rp
        inc dx
        mov ah, 0x0D
        int 0x10
        xor ah, ah
        mov [di], ax
        ; the same pixels straight from video RAM
        mov ax, 0xB800
        mov es, ax
        mov al, [es:0x07E9]
        mov ah, [es:0x27E9]
        mov [SLOT(5)], ax
        xor ax, ax
        mov es, ax
        ; teletype a 'G' in colour 3 at the top left and read it back
        mov ah, 0x02
        xor bh, bh
        xor dx, dx
        int 0x10
        mov ax, 0x0E47
        mov bx, 0x0003
        int 0x10
        mov ah, 0x02
        xor bh, bh
        xor dx, dx
        int 0x10
        mov ah, 0x08
        int 0x10
        xor ah, ah
        mov [SLOT(6)], ax
        ; let the test look at the frame, continue on a key
        mov byte [RES_PHASE], 1
        xor ah, ah
        int 0x16

        ; ---------------- mode 3: 80x25 text ----------------------------
        mov byte [RES_PHASE], 2
        mov ax, 0x0003
        int 0x10
        mov ah, 0x0F
        int 0x10
        mov [SLOT(7)], ax
        mov bl, bh
        xor bh, bh
        mov [SLOT(8)], bx
        ; AH=09h: three 'X' in attribute 1Eh at row 2 col 5, read the middle one
        mov dx, 0x0205
        call setcur
        mov ax, 0x0958
        mov bx, 0x001E
        mov cx, 3
        int 0x10
        mov dx, 0x0206
        call setcur
        mov ah, 0x08
        xor bh, bh
        int 0x10
        mov [SLOT(9)], ax
        ; the alphabet at row 11 col 5, "ROW10" at row 10 col 0
        mov dx, 0x0B05
        call setcur
        mov si, alphabet
        call print
        mov dx, 0x0A00
        call setcur
        mov si, row10
        call print
        ; AH=06h: scroll the window rows 10-12, cols 10-20 up one line, attr 4Fh
        mov ax, 0x0601
        mov bh, 0x4F
        mov cx, 0x0A0A
        mov dx, 0x0C14
        int 0x10
        mov dx, 0x0C0C
        call setcur
        call readcell
        mov [SLOT(11)], ax
        mov dx, 0x0A0C
        call setcur
        call readcell
        mov [SLOT(12)], ax
        mov dx, 0x0B05
        call setcur
        call readcell
        mov [SLOT(16)], ax
        ; teletype three lines from row 23: the screen scrolls up twice
        mov dx, 0x1700
        call setcur
        mov si, lines
        call print
        mov ah, 0x03
        xor bh, bh
        int 0x10
        mov [SLOT(10)], dx

        ; ---------------- CGA status port 3DAh --------------------------
        ; vertical retrace: rising edges of bit 3 during 10 BIOS ticks
        mov dx, 0x3DA
        call wait_tick
        mov bx, [BDA_TICKS]
        add bx, 10
        xor cx, cx
        in al, dx
        and al, 8
        mov ah, al
.v:     in al, dx
        and al, 8
        cmp al, ah
        je .vs
        mov ah, al
        or al, al
        jz .vs
        inc cx
.vs:    cmp bx, [BDA_TICKS]
        jne .v
        mov [SLOT(13)], cx
        ; display enable: rising edges of bit 0 from the end of a vertical
        ; sync to the start of the next one (interrupts off: nothing is missed)
        cli
.a1:    in al, dx
        test al, 8
        jz .a1
.a2:    in al, dx
        test al, 8
        jnz .a2
        xor ax, ax
        xor cx, cx
        mov bl, 1
.c:     in al, dx
        test al, 8
        jnz .cd
        and al, 1
        cmp al, bl
        je .c
        mov bl, al
        add cx, ax
        jmp .c
.cd:    sti
        mov [SLOT(14)], cx

        ; ---------------- summary ---------------------------------------
        mov dx, 0x0C00
        call setcur
        mov si, s_mode4
        mov bx, SLOT(0)
        call show
        mov si, s_pix
        mov bx, SLOT(5)
        call show
        mov si, s_mode3
        mov bx, SLOT(7)
        call show
        mov si, s_cell
        mov bx, SLOT(9)
        call show
        call newline
        mov si, s_vsync
        mov bx, SLOT(13)
        call show
        mov si, s_lines
        mov bx, SLOT(14)
        call show
        call newline
        mov si, s_done
        call print

        ; ---------------- CRTC cursor registers, directly ---------------
        mov dx, 0x3D4
        mov ax, 0x020E              ; R14 = 02h
        out dx, al
        inc dx
        mov al, ah
        out dx, al
        dec dx
        mov ax, 0x510F              ; R15 = 51h  -> 0251h = row 7, col 33
        out dx, al
        inc dx
        mov al, ah
        out dx, al
        dec dx
        mov al, 0x0E
        out dx, al
        inc dx
        in al, dx
        mov ah, al
        dec dx
        mov al, 0x0F
        out dx, al
        inc dx
        in al, dx
        mov [SLOT(15)], ax
        mov si, empty
        jmp finish

; set the cursor of page 0 to DH = row, DL = column
setcur:
        push ax
        push bx
        mov ah, 0x02
        xor bh, bh
        int 0x10
        pop bx
        pop ax
        ret

; AX = character and attribute at the cursor of page 0
readcell:
        push bx
        mov ah, 0x08
        xor bh, bh
        int 0x10
        pop bx
        ret

alphabet:   db "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 0
row10:      db "ROW10", 0
lines:      db "LINE1", 13, 10, "LINE2", 13, 10, "LINE3", 13, 10, 0
s_mode4:    db "MODE4 ", 0
s_pix:      db "PIX ", 0
s_mode3:    db "MODE3 ", 0
s_cell:     db "CELL ", 0
s_vsync:    db "VSYNC/10T ", 0
s_lines:    db "LINES ", 0
s_done:     db "VIDEO DONE", 0
empty:      db 0

%include "tail.inc"
