; fdcfmt.asm - format a blank 360 KiB floppy in drive B: and read it back
; (pypc guest test program; boots from A:, INT 13h goes through the
; floppy controller card and DMA channel 2)
;
; The program reads B: cylinder 0 head 0 sector 1.  If it does not start
; with the signature "PYFM" this is the first run: every track (cylinders
; 0-39, heads 0-1) is formatted with AH=05h (ID fields C, H, 1-9, 2; the
; fill byte comes from the INT 1Eh table, F6h), then sector 1 of every
; track gets "PYFM", its cylinder and head (AH=03h).  Otherwise this is
; the second run: every track is read whole (AH=02h, 9 sectors) and
; checked: sector 1 holds the signature, cylinder and head, the other
; eight sectors are all F6h.
;
; Results (word slots at 0610h + 2*n):
;   0  mode: 1 = formatted, 2 = read back
;   1  tracks formatted without error (80 on the first run)
;   2  tracks whose sector 1 was written (80)
;   3  tracks read without error (80 on the second run)
;   4  tracks whose contents were right (80)
;   5  AX of the first failing INT 13h (0 if none)
;   6  sectors per track reported by AH=08h on B: (CL, expect 9)

        cpu 8086
        org 0x7C00
%include "common.inc"

DRIVE_B equ 1
BUF     equ 0x9000              ; 0000:9000 - 0000:A1FF track buffer
IDS     equ 0x7000              ; ID fields for AH=05h

main:
        xor ax, ax
        mov [SLOT(5)], ax
        mov ah, 0x08                ; drive parameters of B:
        mov dl, DRIVE_B
        int 0x13
        xor ch, ch
        and cl, 0x3F
        mov [SLOT(6)], cx
        xor ax, ax                  ; AH=08h pointed ES:DI at its table
        mov es, ax
        ; first sector of B:
        mov ax, 0x0201
        mov cx, 0x0001
        xor dh, dh
        mov dl, DRIVE_B
        mov bx, BUF
        int 0x13
        jc .format                  ; unreadable: format it
        cmp word [BUF], 'PY'
        jne .format
        cmp word [BUF + 2], 'FM'
        jne .format
        jmp readback

.format:
        mov word [SLOT(0)], 1
        xor bp, bp                  ; BP high = cylinder, low = head
.ftrack:
        ; the ID fields of this track: C, H, R, N=2
        mov di, IDS
        mov cx, 1
.fid:   mov ax, bp
        mov [di], ah                ; C
        mov [di + 1], al            ; H
        mov [di + 2], cl            ; R
        mov byte [di + 3], 2        ; N: 512 bytes
        add di, 4
        inc cx
        cmp cx, 10
        jb .fid
        mov ax, bp
        mov ch, ah
        mov dh, al
        mov dl, DRIVE_B
        mov bx, IDS
        mov ax, 0x0509
        int 0x13
        jc .ferr
        inc word [SLOT(1)]
        ; sector 1: signature, cylinder, head
        mov di, BUF
        mov cx, 256
        mov ax, 0x5A5A
        rep stosw
        mov word [BUF], 'PY'
        mov word [BUF + 2], 'FM'
        mov [BUF + 4], bp
        mov ax, bp
        mov ch, ah
        mov cl, 1
        mov dh, al
        mov dl, DRIVE_B
        mov bx, BUF
        mov ax, 0x0301
        int 0x13
        jc .ferr
        inc word [SLOT(2)]
        jmp .fnext
.ferr:  call first_error
.fnext: call next_track
        jnc .ftrack
        mov si, s_formatted
        jmp report

readback:
        mov word [SLOT(0)], 2
        xor bp, bp
.rtrack:
        mov di, BUF                 ; clear the buffer first
        mov cx, 9 * 256
        xor ax, ax
        rep stosw
        mov ax, bp
        mov ch, ah
        mov cl, 1
        mov dh, al
        mov dl, DRIVE_B
        mov bx, BUF
        mov ax, 0x0209
        int 0x13
        jc .rerr
        cmp al, 9
        jne .rerr
        inc word [SLOT(3)]
        cmp word [BUF], 'PY'
        jne .rnext
        cmp word [BUF + 2], 'FM'
        jne .rnext
        cmp [BUF + 4], bp
        jne .rnext
        mov si, BUF + 512           ; sectors 2-9: the fill byte
        mov cx, 8 * 512
.chk:   lodsb
        cmp al, 0xF6
        jne .rnext
        loop .chk
        inc word [SLOT(4)]
        jmp .rnext
.rerr:  call first_error
.rnext: call next_track
        jnc .rtrack
        mov si, s_read

report:
        call print
        mov ax, [SLOT(1)]
        call hex16
        call space
        mov ax, [SLOT(2)]
        call hex16
        call space
        mov ax, [SLOT(3)]
        call hex16
        call space
        mov ax, [SLOT(4)]
        call hex16
        call space
        mov ax, [SLOT(5)]
        call hex16
        call newline
        mov si, s_done
        jmp finish

; keep AX of the first failing call
first_error:
        cmp word [SLOT(5)], 0
        jne .k
        mov [SLOT(5)], ax
        cmp word [SLOT(5)], 0
        jne .k
        mov word [SLOT(5)], 0xFFFF
.k:     ret

; BP: next head / cylinder; CF set after cylinder 39 head 1
next_track:
        inc bp
        test bp, 0x0002
        jz .ok
        and bp, 0xFF00
        add bp, 0x0100
        cmp bp, 40 * 0x100
        jae .end
.ok:    clc
        ret
.end:   stc
        ret

s_formatted: db "FORMATTED ", 0
s_read:      db "READ BACK ", 0
s_done:      db "FDCFMT DONE", 0

%include "tail.inc"
