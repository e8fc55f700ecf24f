; A program for the debugger tests (tests/test_debugger.py), loaded at
; 0000:7C00 by the test itself (not booted).  Each label is a place a test
; puts a breakpoint on or steps over; DATA is 0000:0500.
        cpu 8086
        org 0x7C00
DATA    equ 0x0500

start:  cli
        xor ax, ax
        mov ds, ax
        mov es, ax
        mov ss, ax
        mov sp, 0x7000
        mov word [0x60*4], int60    ; INT 60h -> int60 (0000:int60)
        mov word [0x60*4+2], 0
first:  mov ax, 0x1234              ; 7C17
        mov bx, 0
call1:  call proc                   ; step over this
after1: inc bx
        mov si, DATA
        mov di, DATA + 0x100
        mov cx, 1000
        cld
rep1:   rep movsb                   ; and this
after2: mov ah, 0x4C
        mov al, 7
int1:   int 0x60                    ; and this
after3: mov cx, 1000
loop1:  inc dx                      ; the LOOP below runs back here
        loop loop1
after4: out 0x80, al                ; an unclaimed port
        in al, 0x61                 ; a port the core answers itself
        mov [DATA + 2], ax
        mov al, [DATA + 3]
done:   hlt

proc:   mov cx, 1000
.again: inc bx
        loop .again
        mov [DATA], ax
inner:  ret

int60:  mov [DATA + 4], ax
        iret
