; vga_bench.asm - the VGA benchmark guests (pypc_plugins.vga.bench embeds
; the assembled bytes; a test checks they match this source).
;
; Three boot sectors, chosen with -D: BENCH13 fills the mode 13h screen
; (64,000 bytes, REP STOSW through chain-4) over and over with the next
; colour; BENCH12 fills the mode 12h screen (38,400 bytes a plane, all four
; planes at once) in write mode 2 with the next colour, over and over;
; BENCH12PIX paints the mode 12h screen pixel by pixel as EGA/VGA drawing
; code does: for every pixel an OUT of the bit mask, a read to load the
; latches and a write of the set/reset colour.
; All count finished screens in the word at 0000:0500h.

        cpu 8086
        org 0x7C00
        cli
        xor ax, ax
        mov ds, ax
        mov ss, ax
        mov sp, 0x7C00
        sti
        cld
        mov word [0x0500], 0
%ifdef BENCH13
        mov ax, 0x0013
        int 0x10
        mov ax, 0xA000
        mov es, ax
        xor bx, bx
.fill:  xor di, di
        mov al, bl
        mov ah, bl
        mov cx, 32000
        rep stosw
        inc bl
        inc word [0x0500]
        jmp .fill
%elifdef BENCH12PIX
        mov ax, 0x0012
        int 0x10
        mov dx, 0x3CE
        mov ax, 0x0F01              ; set/reset on all four planes
        out dx, ax
        mov ax, 0xA000
        mov es, ax
        xor bx, bx
.fill:  mov ah, bl                  ; set/reset value: the colour
        xor al, al
        out dx, ax
        xor di, di
.byte:  mov ah, 0x80
.bit:   mov al, 8                   ; bit mask := this pixel
        out dx, ax
        mov al, [es:di]             ; latches
        mov [es:di], al             ; the colour under the bit mask
        shr ah, 1
        jnz .bit
        inc di
        cmp di, 38400
        jne .byte
        inc bl
        inc word [0x0500]
        jmp .fill
%else
        mov ax, 0x0012
        int 0x10
        mov dx, 0x3CE               ; graphics controller: write mode 2
        mov ax, 0x0205
        out dx, ax
        mov ax, 0xA000
        mov es, ax
        xor bx, bx
.fill:  xor di, di
        mov al, bl
        mov cx, 38400
        rep stosb
        inc bl
        inc word [0x0500]
        jmp .fill
%endif
        times 510 - ($ - $$) db 0
        dw 0xAA55
