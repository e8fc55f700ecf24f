; disk.asm - INT 13h on a 360 KiB floppy (pypc guest test program)
;
; The test puts known data in cylinder 0, head 1, sectors 1-9 (LBA 9-17).
; The program resets the drive, reads those 9 sectors and checksums them,
; writes a sector (cylinder 2, head 1, sector 3 = LBA 47), reads it back
; and compares, verifies it, asks for the drive parameters, and provokes
; the errors: a sector that does not exist (sector 10, cylinder 40), a DMA
; transfer across a 64 KiB boundary, a drive that is not there.
;
; Results (word slots at 0610h + 2*n; "CF" slots are 0 or 1):
;   0  AX of AH=00h reset (expect 0000h)      1  CF (0)
;   2  AX of AH=02h, 9 sectors from C0 H1 S1 (expect 0009h)   3  CF (0)
;   4  sum of the 4608 bytes read, mod 10000h
;   5  hash of the 2304 words read: h = rol(h, 1) xor word, from h = 0
;   6  AX of AH=03h write of LBA 47 (expect 0001h)   7  CF (0)
;   8  AX of AH=02h reading LBA 47 back (0001h)       9  CF (0)
;   10 bytes that differ between what was written and what was read (0)
;   11 AX of AH=04h verify of LBA 47 (0001h)          12 CF (0)
;   13 BX of AH=08h (expect 0001h: type 1, 360 KiB)
;   14 CX of AH=08h (expect 2709h: 39 cylinders max, 9 sectors)
;   15 DX of AH=08h (expect 0101h: max head 1, 1 drive)   16 CF (0)
;   17 AX of AH=02h of sector 10 (expect 0400h: sector not found)   18 CF (1)
;   19 AX of AH=01h right after (expect 0404h)        20 CF (1)
;   21 AX of AH=02h of cylinder 40 (expect 0400h)     22 CF (1)
;   23 AX of AH=02h into 1000:FF00h (expect 0900h: DMA boundary)   24 CF (1)
;   25 AX of AH=02h on drive 1, absent (expect 8000h: timeout)     26 CF (1)
;   27 first word read back from LBA 47 (expect 5547h, "GU")
;   28 0040:0041 (diskette status) after the last successful read (0)

        cpu 8086
        org 0x7C00
%include "common.inc"

; store AX in slot n and CF (0/1) in slot n+1; flags must still hold CF
%macro AXCF 1
        mov [SLOT(%1)], ax
        mov ax, 0
        adc ax, 0
        mov [SLOT(%1 + 1)], ax
%endmacro

DRIVE   equ RES_DRIVE

main:
        ; AH=00h reset
        xor ax, ax
        mov dl, [DRIVE]
        int 0x13
        AXCF 0
        ; AH=02h: 9 sectors from cylinder 0 head 1 sector 1 to 1000:0000
        mov ax, 0x1000
        mov es, ax
        xor bx, bx
        mov ax, 0x0209
        mov cx, 0x0001
        mov dh, 1
        mov dl, [DRIVE]
        int 0x13
        AXCF 2
        xor ax, ax
        mov es, ax
        ; checksums of the 4608 bytes
        push ds
        mov ax, 0x1000
        mov ds, ax
        xor si, si
        xor bx, bx                  ; byte sum
        xor dx, dx                  ; rotating hash
        mov cx, 2304
.sum:   lodsw
        add bl, al
        adc bh, 0
        add bl, ah
        adc bh, 0
        rol dx, 1
        xor dx, ax
        loop .sum
        pop ds
        mov [SLOT(4)], bx
        mov [SLOT(5)], dx

        ; the sector to write: "GUEST WROTE THIS" then (i*3 + 5Ah) & FFh
        mov ax, 0x2000
        mov es, ax
        xor di, di
        xor cx, cx
.fill:  mov al, cl
        mov ah, 3
        mul ah
        add al, 0x5A
        stosb
        inc cx
        cmp cx, 512
        jb .fill
        xor di, di
        mov si, marker
        mov cx, 16
        rep movsb
        ; AH=03h write one sector: cylinder 2, head 1, sector 3 (LBA 47)
        xor bx, bx
        mov ax, 0x0301
        mov cx, 0x0203
        mov dh, 1
        mov dl, [DRIVE]
        int 0x13
        AXCF 6
        ; read it back to 3000:0000
        mov ax, 0x3000
        mov es, ax
        xor bx, bx
        mov ax, 0x0201
        mov cx, 0x0203
        mov dh, 1
        mov dl, [DRIVE]
        int 0x13
        AXCF 8
        mov ax, [es:0]
        mov [SLOT(27)], ax
        mov al, [0x441]
        xor ah, ah
        mov [SLOT(28)], ax
        ; compare 2000:0000 with 3000:0000
        push ds
        mov ax, 0x2000
        mov ds, ax
        xor si, si
        xor di, di
        xor dx, dx
        mov cx, 512
.cmp:   cmpsb
        je .same
        inc dx
.same:  loop .cmp
        pop ds
        mov [SLOT(10)], dx
        ; AH=04h verify the sector
        mov ax, 0x0401
        mov cx, 0x0203
        mov dh, 1
        mov dl, [DRIVE]
        int 0x13
        AXCF 11
        xor ax, ax
        mov es, ax

        ; AH=08h drive parameters
        push es
        mov ah, 0x08
        mov dl, [DRIVE]
        int 0x13
        pop es
        mov [SLOT(13)], bx
        mov [SLOT(14)], cx
        mov [SLOT(15)], dx
        mov ax, 0
        adc ax, 0
        mov [SLOT(16)], ax

        ; errors: sector 10 does not exist on a 9-sector track
        mov bx, 0x4000
        mov ax, 0x0201
        mov cx, 0x000A
        xor dh, dh
        mov dl, [DRIVE]
        int 0x13
        AXCF 17
        mov ah, 0x01                ; status of the last operation
        mov dl, [DRIVE]
        int 0x13
        AXCF 19
        ; cylinder 40 does not exist either
        mov ax, 0x0201
        mov cx, 0x2801
        xor dh, dh
        mov dl, [DRIVE]
        int 0x13
        AXCF 21
        ; a buffer at 1000:FF00h crosses the 64 KiB boundary at 20000h
        mov ax, 0x1000
        mov es, ax
        mov bx, 0xFF00
        mov ax, 0x0201
        mov cx, 0x0001
        xor dh, dh
        mov dl, [DRIVE]
        int 0x13
        AXCF 23
        xor ax, ax
        mov es, ax
        ; drive B: is not installed
        mov bx, 0x4000
        mov ax, 0x0201
        mov cx, 0x0001
        xor dh, dh
        mov dl, 1
        int 0x13
        AXCF 25

        ; summary
        mov si, s_reset
        mov bx, SLOT(0)
        call show
        mov si, s_read
        mov bx, SLOT(2)
        call show
        mov si, s_sum
        mov bx, SLOT(4)
        call show
        mov bx, SLOT(5)
        mov si, empty
        call show
        call newline
        mov si, s_write
        mov bx, SLOT(6)
        call show
        mov si, s_back
        mov bx, SLOT(8)
        call show
        mov si, s_diff
        mov bx, SLOT(10)
        call show
        mov si, s_verify
        mov bx, SLOT(11)
        call show
        call newline
        mov si, s_parms
        mov bx, SLOT(13)
        call show
        mov bx, SLOT(14)
        mov si, empty
        call show
        mov bx, SLOT(15)
        call show
        call newline
        mov si, s_errs
        mov bx, SLOT(17)
        call show
        mov si, empty
        mov bx, SLOT(19)
        call show
        mov bx, SLOT(21)
        call show
        mov bx, SLOT(23)
        call show
        mov bx, SLOT(25)
        call show
        call newline
        mov si, s_done
        jmp finish

marker:     db "GUEST WROTE THIS"
s_reset:    db "RESET ", 0
s_read:     db "READ ", 0
s_sum:      db "SUM ", 0
s_write:    db "WRITE ", 0
s_back:     db "BACK ", 0
s_diff:     db "DIFF ", 0
s_verify:   db "VERIFY ", 0
s_parms:    db "PARMS ", 0
s_errs:     db "ERRORS ", 0
s_done:     db "DISK DONE", 0
empty:      db 0

%include "tail.inc"
