; joystick.asm - a game-port polling loop (pypc guest test program)
;
; Loaded at 1000:0000 and entered there (it needs no disk).  It waits for
; the host to bump the request byte at 0000:0500, then fires the one-shots
; (OUT 201h) and counts, in one loop of fixed length, how many iterations
; each of the four axis bits stays set; it stores the counts and the button
; nibble at 0000:0510 (A x, A y, B x, B y words, then the buttons byte),
; acknowledges the request at 0000:0501 and waits for the next one.
;
; The counting loop, 8088 cycles: IN AL,DX 8, AND AL,0Fh 4, JZ 4 (not
; taken), 4 x (SHR AL,1 2 + ADC r16,0 4), LOOP 17: 57 cycles an iteration.

        cpu 8086
        org 0

REQUEST equ 0x0500
ACK     equ 0x0501
COUNTS  equ 0x0510

        cli
        xor ax, ax
        mov ds, ax
        mov dx, 0x201
idle:   mov al, [REQUEST]
        cmp al, [ACK]
        je idle
        xor si, si
        xor di, di
        xor bp, bp
        xor bx, bx
        mov cx, 0xFFFF
        out dx, al                      ; fire the four one-shots
count:  in al, dx
        and al, 0x0F
        jz done
        shr al, 1
        adc si, 0
        shr al, 1
        adc di, 0
        shr al, 1
        adc bp, 0
        shr al, 1
        adc bx, 0
        loop count
done:   mov [COUNTS], si
        mov [COUNTS + 2], di
        mov [COUNTS + 4], bp
        mov [COUNTS + 6], bx
        in al, dx
        mov cl, 4
        shr al, cl
        mov [COUNTS + 8], al
        mov al, [REQUEST]
        mov [ACK], al
        jmp idle
