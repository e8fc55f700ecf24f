; fdcport.asm - a program that drives the floppy controller itself, as
; disk utilities and copy-protection checks do (pypc guest test program;
; boots from A:, works on drive B:)
;
; It selects drive B: with its motor on (DOR 3F2h), recalibrates and seeks
; (polling "sense interrupt status" until the seek has ended), formats
; cylinder 5 head 0 with four 1 KiB sectors numbered 41h-44h (DMA channel 2,
; fill byte 6Dh), writes sector 42h, reads the next ID under the head,
; reads sectors 41h-42h back by DMA, and asks for sector 1 of 512 bytes,
; which that track no longer has.
;
; Results (word slots at 0610h + 2*n; a result phase is stored as 7 bytes
; from 0700h + 8*k):
;   0  ST0 and PCN of the recalibrate's sense interrupt status (0021h: ST0 21h, PCN 0)
;   1  ST0 and PCN after the seek to 5 (0521h)
;   k=0 at 0700h  format result          k=1 at 0708h  write result
;   k=2 at 0710h  read ID result         k=3 at 0718h  read result
;   k=4 at 0720h  result of sector 1 N=2 (no data)
;   2  bytes of the 2 KiB read that differ from what is expected (0)
;   3  MSR after the last result byte (80h)

        cpu 8086
        org 0x7C00
%include "common.inc"

DOR     equ 0x3F2
MSR     equ 0x3F4
FDATA   equ 0x3F5
IDS     equ 0x7000
WBUF    equ 0x9000              ; 1 KiB to write
RBUF    equ 0x9800              ; 2 KiB read back

main:
        mov dx, DOR
        mov al, 0x29                ; drive 1 (B:), no motor, DMA/IRQ on, reset
        out dx, al
        mov al, 0x2D                ; out of reset, motor B on
        out dx, al
        ; take the four ready-change interrupts
        mov cx, 4
.rc:    mov al, 0x08
        call cmd
        call result2
        loop .rc
        mov al, 0x03                ; specify: SRT D, HUT F, HLT 1, DMA
        call cmd
        mov al, 0xDF
        call cmd
        mov al, 0x02
        call cmd
        ; recalibrate drive 1
        mov al, 0x07
        call cmd
        mov al, 0x01
        call cmd
        call wait_seek
        mov [SLOT(0)], ax
        ; seek to cylinder 5
        mov al, 0x0F
        call cmd
        mov al, 0x01
        call cmd
        mov al, 5
        call cmd
        call wait_seek
        mov [SLOT(1)], ax
        ; format: IDs C=5 H=0 R=41h..44h N=3
        mov di, IDS
        mov cl, 0x41
.fid:   mov byte [di], 5
        mov byte [di + 1], 0
        mov [di + 2], cl
        mov byte [di + 3], 3
        add di, 4
        inc cl
        cmp cl, 0x45
        jb .fid
        mov al, 0x4A                ; DMA: memory -> controller
        mov bx, IDS
        mov cx, 16
        call dma
        mov al, 0x4D                ; format track, MFM
        call cmd
        mov al, 0x01                ; head 0, drive 1
        call cmd
        mov al, 3                   ; N: 1 KiB
        call cmd
        mov al, 4                   ; sectors
        call cmd
        mov al, 0x74                ; gap
        call cmd
        mov al, 0x6D                ; fill byte
        call cmd
        mov di, 0x0700
        call result7
        ; write sector 42h
        mov di, WBUF
        mov cx, 512
        mov ax, 0xA55A
        rep stosw
        mov al, 0x4A
        mov bx, WBUF
        mov cx, 1024
        call dma
        mov al, 0x45                ; write data, MFM
        mov si, rw_42
        call rw
        mov di, 0x0708
        call result7
        ; read ID
        mov al, 0x4A
        call cmd
        mov al, 0x01
        call cmd
        mov di, 0x0710
        call result7
        ; read 41h-42h (2 KiB) by DMA
        mov al, 0x46                ; DMA: controller -> memory
        mov bx, RBUF
        mov cx, 2048
        call dma
        mov al, 0x46                ; read data, MFM
        mov si, rw_41
        call rw
        mov di, 0x0718
        call result7
        ; sector 1, 512 bytes: not on this track any more
        mov al, 0x46
        mov bx, RBUF + 2048
        mov cx, 512
        call dma
        mov al, 0x46
        mov si, rw_01
        call rw
        mov di, 0x0720
        call result7
        mov dx, MSR
        in al, dx
        xor ah, ah
        mov [SLOT(3)], ax
        ; compare the 2 KiB
        xor dx, dx
        mov si, RBUF
        mov cx, 1024
.c1:    lodsb
        cmp al, 0x6D
        je .c1ok
        inc dx
.c1ok:  loop .c1
        mov cx, 512
.c2:    lodsw
        cmp ax, 0xA55A
        je .c2ok
        inc dx
.c2ok:  loop .c2
        mov [SLOT(2)], dx
        ; show the results
        mov si, s_res
        call print
        mov si, 0x0700
        mov cx, 5 * 8
.sh:    lodsb
        call hex8
        loop .sh
        call newline
        mov si, s_done
        jmp finish

; the rest of a read/write command: unit, C, H, R, N, EOT, GPL, DTL from [SI]
rw:     call cmd
        mov cx, 8
.p:     lodsb
        call cmd
        loop .p
        ret

rw_42:  db 0x01, 5, 0, 0x42, 3, 0x44, 0x35, 0xFF
rw_41:  db 0x01, 5, 0, 0x41, 3, 0x44, 0x35, 0xFF
rw_01:  db 0x01, 5, 0, 0x01, 2, 0x09, 0x2A, 0xFF

; AL -> the data register once RQM is set and DIO clear
cmd:    push ax
        push dx
        mov ah, al
        mov dx, MSR
.w:     in al, dx
        and al, 0xC0
        cmp al, 0x80
        jne .w
        mov dx, FDATA
        mov al, ah
        out dx, al
        pop dx
        pop ax
        ret

; read one result byte into AL (waits for RQM and DIO)
rbyte:  push dx
        mov dx, MSR
.w:     in al, dx
        and al, 0xC0
        cmp al, 0xC0
        jne .w
        mov dx, FDATA
        in al, dx
        pop dx
        ret

result2:
        call rbyte
        call rbyte
        ret

; seven result bytes to [DI] (waits for the result phase)
result7:
        push cx
        mov cx, 7
.r:     call rbyte
        stosb
        loop .r
        pop cx
        ret

; sense interrupt status until a seek has ended: AH = PCN, AL = ST0
wait_seek:
.again: mov al, 0x08
        call cmd
        call rbyte
        cmp al, 0x80                ; nothing yet
        je .again
        mov ah, al
        call rbyte
        xchg al, ah
        ret

; program DMA channel 2: mode AL, address 0000:BX, CX bytes
dma:    push dx
        out 0x0B, al
        mov al, 0x06
        out 0x0A, al                ; mask channel 2
        out 0x0C, al                ; flip-flop
        mov al, bl
        out 0x04, al
        mov al, bh
        out 0x04, al
        xor al, al
        out 0x81, al                ; page 0
        dec cx
        mov al, cl
        out 0x05, al
        mov al, ch
        out 0x05, al
        mov al, 0x02
        out 0x0A, al                ; unmask
        pop dx
        ret

s_res:  db "FDC ", 0
s_done: db "FDCPORT DONE", 0

%include "tail.inc"
