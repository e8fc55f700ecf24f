; vga_ports.asm - the VGA through its ports and memory only (pypc guest test
; program).  No INT 10h after the boot loader: text-mode page flipping,
; cursor and attribute registers by port, the attribute flip-flop and the
; status port, the DAC, then mode 13h, mode X (unchained 256 colours) and
; mode 12h programmed register by register; write modes 0-3 and read mode 1
; checked byte by byte.
;
; Results (word slots at 0610h + 2*n):
;   0  AC 10h read back through 3C1h after the blink bit was cleared (0004h)
;   1  3C0h read after the flip-flop was reset by 3DAh and 33h written (0033h)
;   2  AC 12h read back (000Fh: the reset kept 33h out of it)
;   3  vertical retrace rising edges (3DAh bit 3) during 10 BIOS ticks (~38)
;   4  DAC entry 7 read through 3C7h/3C9h: red | green << 8 (2A2Ah)
;   5  blue of it (002Ah)
;   6  mode X: byte read at A000:0000 with read map 2 (0002h)
;  10/11  write mode 0, set/reset + bit mask:  p0|p1<<8, p2|p3<<8 (C03Fh, 599Ah)
;  12/13  write mode 0, rotate 3 + XOR            (C03Fh, 659Ah)
;  14/15  write mode 1, map mask 1010b            (F000h, 5500h)
;  16/17  write mode 2, OR, bit mask F0h          (F00Fh, F5AAh)
;  18/19  write mode 3, rotate 1, bit mask 0Fh    (F00Fh, 5DA2h)
;  20  read mode 1, compare 0101b, don't care 1111b (000Ah)
;  21  read mode 1, don't care 0011b (000Fh)
; Phases: 1 text page 2 shown by start address; 2 page 1, block cursor at
; row 3 col 5, blink off; 3 counts done; 4 mode 13h drawn; 5 mode X drawn;
; 6 mode X second page shown; 7 mode 12h drawn.

        cpu 8086
        org 0x7C00
%include "common.inc"
%include "vgacommon.inc"
%include "vgaregs.inc"

; the planes' test bytes sit at A000:FF00h (outside the visible 38400 bytes)
WT      equ 0xFF00

main:
        ; ---------------- text mode (the BIOS left mode 3) ------------------
        mov ax, 0xB800
        mov es, ax
        xor di, di
        mov si, s_ports
        mov ah, 0x1F
        call puts
        mov di, 0x1000              ; page 2 at 4 KiB
        mov si, s_page2
        mov ah, 0x2E
        call puts
        outi 0x3D4, 0x0C, 0x08      ; start address 0800h words
        outi 0x3D4, 0x0D, 0x00
        sync 1
        outi 0x3D4, 0x0C, 0x00
        outi 0x3D4, 0x0D, 0x00
        outi 0x3D4, 0x0A, 0x00      ; block cursor, lines 0-15
        outi 0x3D4, 0x0B, 0x0F
        outi 0x3D4, 0x0E, 0x00      ; at 80*3+5 = 245
        outi 0x3D4, 0x0F, 245
        mov di, 5 * 160             ; 'B' with the blink bit at row 5
        mov ax, 0x8E42
        stosw
        ; attribute mode control := 04h (blink off), then read it back
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x10
        outb 0x3C0, 0x04
        outb 0x3C0, 0x20
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x30
        mov dx, 0x3C1
        in al, dx
        xor ah, ah
        res 0
        ; flip-flop: index 32h (now at "data"), reset by 3DAh, index 33h
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x32
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x33
        mov dx, 0x3C0
        in al, dx
        xor ah, ah
        res 1
        outb 0x3C0, 0x08            ; AC 13h (pel panning) := 08h, mode 3's
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x32
        mov dx, 0x3C1
        in al, dx
        xor ah, ah
        res 2
        mov dx, 0x3DA
        in al, dx
        outb 0x3C0, 0x20
        sync 2
        ; vertical retrace edges over 10 ticks
        call wait_tick
        mov bx, [BDA_TICKS]
        add bx, 10
        xor cx, cx
        mov dx, 0x3DA
        in al, dx
        mov ah, al
.vr:    in al, dx
        mov si, ax                  ; keep it
        not ah
        and ah, al
        test ah, 8
        jz .nv
        inc cx
.nv:    mov ax, si
        mov ah, al
        cmp bx, [BDA_TICKS]
        jne .vr
        mov [SLOT(3)], cx
        ; DAC entry 7
        outb 0x3C7, 7
        mov dx, 0x3C9
        in al, dx
        mov bl, al
        in al, dx
        mov bh, al
        in al, dx
        mov [SLOT(4)], bx
        xor ah, ah
        res 5
        sync 3

        ; ---------------- mode 13h by ports -----------------------------------
        mov si, regs13
        call setregs
        outb 0x3C8, 0               ; DAC: grey ramp, entry i = i/4
        mov dx, 0x3C9
        xor bl, bl
.dac:   mov al, bl
        shr al, 1
        shr al, 1
        out dx, al
        out dx, al
        out dx, al
        inc bl
        jnz .dac
        mov ax, 0xA000
        mov es, ax
        xor di, di
        xor dx, dx                  ; y
.y13:   xor bx, bx                  ; x
.x13:   mov al, bl
        xor al, dl
        stosb
        inc bx
        cmp bx, 320
        jne .x13
        inc dx
        cmp dx, 200
        jne .y13
        sync 4

        ; ---------------- mode X: unchained, the same picture -----------------
        outi 0x3C4, 4, 0x06         ; chain-4 off
        outi 0x3D4, 0x14, 0x00      ; doubleword off
        outi 0x3D4, 0x17, 0xE3      ; byte mode
        outi 0x3C4, 2, 0x0F
        xor di, di
        xor ax, ax
        mov cx, 0x8000
        rep stosw
        xor bp, bp                  ; plane
.plane: mov cx, bp
        mov al, 1
        shl al, cl
        mov ah, al
        mov dx, 0x3C4
        mov al, 2
        out dx, al
        inc dx
        mov al, ah
        out dx, al
        xor di, di
        xor dx, dx                  ; y
.yx:    mov bx, bp                  ; x = plane
.xx:    mov al, bl
        xor al, dl
        stosb
        add bx, 4
        cmp bx, 320
        jb .xx
        inc dx
        cmp dx, 200
        jne .yx
        inc bp
        cmp bp, 4
        jne .plane
        ; read map 2 at offset 0: pixel x = 2, y = 0
        outi 0x3CE, 4, 2
        mov al, [es:0]
        xor ah, ah
        res 6
        outi 0x3CE, 4, 0
        ; copy row 0 to row 199 through the latches (write mode 1)
        outi 0x3C4, 2, 0x0F
        outi 0x3CE, 5, 0x41
        push ds
        mov ax, es
        mov ds, ax
        xor si, si
        mov di, 199 * 80
        mov cx, 80
        rep movsb
        pop ds
        outi 0x3CE, 5, 0x40
        sync 5
        ; second page at 4000h: every pixel of line y is colour y
        mov di, 0x4000
        xor dx, dx
.yp:    mov al, dl
        mov cx, 80
        rep stosb
        inc dx
        cmp dx, 200
        jne .yp
        outi 0x3D4, 0x0C, 0x40
        outi 0x3D4, 0x0D, 0x00
        sync 6

        ; ---------------- mode 12h by ports -----------------------------------
        mov si, regs12
        call setregs
        outi 0x3C4, 2, 0x0F         ; clear the planes
        xor di, di
        xor ax, ax
        mov cx, 0x8000
        rep stosw
        ; the test bytes 0Fh F0h AAh 55h at WT in planes 0-3
        mov bx, test_bytes
        mov ah, 1
.tb:    mov dx, 0x3C4
        mov al, 2
        out dx, al
        inc dx
        mov al, ah
        out dx, al
        mov al, [bx]
        mov [es:WT], al
        inc bx
        shl ah, 1
        cmp ah, 16
        jne .tb
        outi 0x3C4, 2, 0x0F
        ; write mode 0: set/reset 0101b, enable 0011b, bit mask 3Ch
        outi 0x3CE, 0, 0x05
        outi 0x3CE, 1, 0x03
        outi 0x3CE, 8, 0x3C
        mov al, [es:WT]
        mov byte [es:WT + 1], 0x99
        call gcreset
        mov di, WT + 1
        mov bx, SLOT(10)
        call planes_out
        ; write mode 0: rotate 3, XOR
        outi 0x3CE, 3, 0x1B
        mov al, [es:WT]
        mov byte [es:WT + 2], 0x81
        call gcreset
        mov di, WT + 2
        mov bx, SLOT(12)
        call planes_out
        ; write mode 1 under map mask 1010b
        outi 0x3CE, 5, 0x01
        outi 0x3C4, 2, 0x0A
        mov al, [es:WT]
        mov byte [es:WT + 3], 0x77
        outi 0x3C4, 2, 0x0F
        call gcreset
        mov di, WT + 3
        mov bx, SLOT(14)
        call planes_out
        ; write mode 2, OR, bit mask F0h
        outi 0x3CE, 5, 0x02
        outi 0x3CE, 3, 0x10
        outi 0x3CE, 8, 0xF0
        mov al, [es:WT]
        mov byte [es:WT + 4], 0x0A
        call gcreset
        mov di, WT + 4
        mov bx, SLOT(16)
        call planes_out
        ; write mode 3: set/reset 1001b, bit mask 0Fh, rotate 1
        outi 0x3CE, 5, 0x03
        outi 0x3CE, 0, 0x09
        outi 0x3CE, 8, 0x0F
        outi 0x3CE, 3, 0x01
        mov al, [es:WT]
        mov byte [es:WT + 5], 0xF0
        call gcreset
        mov di, WT + 5
        mov bx, SLOT(18)
        call planes_out
        ; read mode 1
        outi 0x3CE, 5, 0x08
        outi 0x3CE, 2, 0x05
        outi 0x3CE, 7, 0x0F
        mov al, [es:WT]
        xor ah, ah
        res 20
        outi 0x3CE, 7, 0x03
        mov al, [es:WT]
        xor ah, ah
        res 21
        call gcreset
        ; a colour-12 box (x 160-239, y 200-239) with set/reset
        outi 0x3CE, 0, 0x0C
        outi 0x3CE, 1, 0x0F
        mov di, 200 * 80 + 20
        mov bx, 40
.box:   mov cx, 10
        mov al, 0xFF
        rep stosb
        add di, 70
        dec bx
        jnz .box
        ; write mode 3, colour 10, byte F0h: the left nibble of x 0-79 on y 300
        ; (the latches, loaded from a blank byte, give the right nibble)
        outi 0x3CE, 5, 0x03
        outi 0x3CE, 0, 0x0A
        mov al, [es:0]
        mov di, 300 * 80
        mov cx, 10
        mov al, 0xF0
        rep stosb
        call gcreset
        sync 7
        mov si, s_none
        jmp finish

; GC 0-8 back to mode 12h's values (write mode 0, no set/reset, mask FFh)
gcreset:
        push si
        mov si, regs12 + 1 + 4 + 25
        call set_gc
        pop si
        ret

; the four planes' bytes at ES:DI (read map 0-3) into [BX] and [BX+2]
planes_out:
        push cx
        xor cl, cl
.p:     mov dx, 0x3CE
        mov al, 4
        out dx, al
        inc dx
        mov al, cl
        out dx, al
        mov al, [es:di]
        mov [bx], al
        inc bx
        inc cl
        cmp cl, 4
        jne .p
        outi 0x3CE, 4, 0
        pop cx
        ret

; write the NUL string at DS:SI with attribute AH at ES:DI
puts:
        lodsb
        or al, al
        jz .d
        stosw
        jmp puts
.d:     ret

s_ports:    db "PORTS", 0
s_page2:    db "PAGE2", 0
s_none:     db 0
test_bytes: db 0x0F, 0xF0, 0xAA, 0x55

; IBM VGA register values: misc, seq 1-4, CRTC 0-18h, GC 0-8, AC 0-14h
regs13:
        db 0x63
        db 0x01, 0x0F, 0x00, 0x0E
        db 0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0xBF, 0x1F, 0x00, 0x41, 0x00, 0x00
        db 0x00, 0x00, 0x00, 0x00, 0x9C, 0x8E, 0x8F, 0x28, 0x40, 0x96, 0xB9, 0xA3, 0xFF
        db 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x05, 0x0F, 0xFF
        db 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
        db 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x41, 0x00, 0x0F, 0x00, 0x00
regs12:
        db 0xE3
        db 0x01, 0x0F, 0x00, 0x06
        db 0x5F, 0x4F, 0x50, 0x82, 0x54, 0x80, 0x0B, 0x3E, 0x00, 0x40, 0x00, 0x00
        db 0x00, 0x00, 0x00, 0x00, 0xEA, 0x8C, 0xDF, 0x28, 0x00, 0xE7, 0x04, 0xE3, 0xFF
        db 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x0F, 0xFF
        db 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x14, 0x07
        db 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x01, 0x00, 0x0F, 0x00, 0x00

%include "tail.inc"
