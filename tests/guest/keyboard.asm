; keyboard.asm - INT 16h and the keyboard through ports 60h/61h/21h
; (pypc guest test program)
;
; The test types while the program waits; phases (byte 0000:0602) tell it
; what the program waits for:
;   1  INT 16h AH=00h, three keys        (test types "aB\r")
;   2  polling INT 16h AH=01h for a key  (test types "x")
;   3  polling AH=02h for Left Shift     (test presses 2Ah and keeps it down)
;   4  AH=00h with Shift down            (test types "c")
;   5  polling AH=02h for Shift released (test sends AAh)
;   6  IRQ 1 masked at the PIC (OUT 21h), polling port 60h directly and
;      acknowledging each byte with port 61h bit 7, as XT games do
;      (test presses and releases "q": 10h, 90h)
;
; Results (word slots at 0610h + 2*n):
;   0  ZF of AH=01h on the empty buffer at start (expect 1)
;   1  AX of AH=00h: 1E61h ('a')   2  3042h ('B')   3  1C0Dh (Enter)
;   4  AX of AH=01h once a key is there (2D78h, 'x')   5  its ZF (0)
;   6  AX of AH=01h again: the key is still there (2D78h)
;   7  AX of AH=00h (2D78h)            8  ZF of AH=01h afterwards (1)
;   9  AL of AH=02h with Left Shift down (02h)
;   10 AX of AH=00h with Shift down (2E43h, 'C')
;   11 AL of AH=02h after Shift was released (00h)
;   12 IMR read back from port 21h after masking IRQ 1 (bit 1 set)
;   13 port 60h: make code (10h)   14 port 60h: break code (90h)
;   15 port 60h right after the acknowledge (00h: register cleared)
;   16 port 60h while port 61h bit 7 is set (the switch byte SW1)
;   17 ZF of AH=01h after IRQ 1 is unmasked again (1: the BIOS never saw "q")
;   18 IRR (OCW3 0Ah, IN 20h) before unmasking (informational)

        cpu 8086
        org 0x7C00
%include "common.inc"

; store ZF (0/1) in slot n
%macro ZFSLOT 1
        mov ax, 0
        jnz %%nz
        inc ax
%%nz:   mov [SLOT(%1)], ax
%endmacro

main:
        mov si, s_start
        call print
        mov ah, 0x01
        int 0x16
        ZFSLOT 0

        ; phase 1: three keys with AH=00h
        mov byte [RES_PHASE], 1
        mov di, SLOT(1)
        mov cx, 3
.k3:    xor ah, ah
        int 0x16
        mov [di], ax
        add di, 2
        cmp al, ' '
        jb .noecho
        call putc
.noecho:
        loop .k3
        call newline

        ; phase 2: peek until a key is there
        mov byte [RES_PHASE], 2
.peek:  mov ah, 0x01
        int 0x16
        jnz .got
        hlt
        jmp .peek
.got:   mov [SLOT(4)], ax
        ZFSLOT 5
        mov ah, 0x01
        int 0x16
        mov [SLOT(6)], ax
        xor ah, ah
        int 0x16
        mov [SLOT(7)], ax
        mov ah, 0x01
        int 0x16
        ZFSLOT 8

        ; phase 3: wait for Left Shift
        mov byte [RES_PHASE], 3
.sh:    mov ah, 0x02
        int 0x16
        test al, 0x02
        jnz .shdown
        hlt
        jmp .sh
.shdown:
        xor ah, ah
        mov [SLOT(9)], ax
        ; phase 4: a key with Shift down
        mov byte [RES_PHASE], 4
        xor ah, ah
        int 0x16
        mov [SLOT(10)], ax
        call putc
        ; phase 5: wait for Shift to be released
        mov byte [RES_PHASE], 5
.su:    mov ah, 0x02
        int 0x16
        test al, 0x02
        jz .shup
        hlt
        jmp .su
.shup:  xor ah, ah
        mov [SLOT(11)], ax
        call newline

        ; phase 6: IRQ 1 masked, the keyboard read straight from port 60h
        cli
        in al, 0x21
        or al, 0x02
        out 0x21, al
        in al, 0x21
        xor ah, ah
        mov [SLOT(12)], ax
        sti                         ; the timer keeps running
        mov byte [RES_PHASE], 6
        call port_key
        mov [SLOT(13)], ax
        in al, 0x60                 ; acknowledged: the register reads 00h
        mov [SLOT(15)], ax
        call port_key
        mov [SLOT(14)], ax
        mov al, 0x0A                ; OCW3: read IRR
        out 0x20, al
        in al, 0x20
        xor ah, ah
        mov [SLOT(18)], ax
        cli
        in al, 0x21
        and al, 0xFD
        out 0x21, al
        sti
        nop
        mov ah, 0x01
        int 0x16
        ZFSLOT 17

        mov si, s_keys
        mov bx, SLOT(1)
        call show
        mov bx, SLOT(2)
        mov si, empty
        call show
        mov bx, SLOT(3)
        call show
        mov bx, SLOT(7)
        call show
        mov bx, SLOT(10)
        call show
        call newline
        mov si, s_ports
        mov bx, SLOT(13)
        call show
        mov si, empty
        mov bx, SLOT(14)
        call show
        call newline
        mov si, s_done
        jmp finish

; wait for a byte in port 60h, acknowledge it with port 61h bit 7; returns
; AX = the byte (AH = 0); the first call also records SW1 (slot 16)
port_key:
        push bx
.w:     in al, 0x60
        or al, al
        jz .w
        mov bl, al
        in al, 0x61
        mov bh, al
        or al, 0x80                 ; clear / acknowledge the keyboard
        out 0x61, al
        in al, 0x60                 ; with bit 7 set: the switch byte
        cmp byte [sw1_done], 0
        jne .restore
        mov [SLOT(16)], al
        mov byte [sw1_done], 1
.restore:
        mov al, bh
        out 0x61, al
        mov al, bl
        xor ah, ah
        pop bx
        ret

sw1_done:   db 0
s_start:    db "KEYBOARD TEST", 13, 10, 0
s_keys:     db "KEYS ", 0
s_ports:    db "PORT60 ", 0
s_done:     db "KBD DONE", 0
empty:      db 0

%include "tail.inc"
