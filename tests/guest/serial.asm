; serial.asm - the 8250 UART at 3F8h (COM1, IRQ 4) through its ports
; (pypc guest test program)
;
; Phases (byte 0000:0602):
;   1  register, loopback and interrupt checks (no host data needed)
;   2  interrupt-driven echo: every byte received (IRQ 4 handler, into a
;      64 KiB ring at 3000:0000) is sent back by the main loop (polling LSR
;      for THR empty); 8 KiB (IRQ_ECHO)
;   3  polled echo (IER 0): 1 MiB each way, the same ring
;
; Results (word slots at 0610h + 2*n):
;   0   MSR in loopback with DTR, RTS, OUT2 (B0h: the lines the terminal
;       drove before, so no deltas)
;   1   MSR read again (deltas cleared: B0h)
;   2   byte received in loopback after sending 41h
;   3   LSR polls until it arrived (one character time at 57600 baud)
;   4   LSR once both of two bytes sent without reading are in (DR, OE,
;       THRE, TEMT: 63h)
;   5   LSR read again (errors cleared: 61h)
;   6   RBR then (the second byte, 43h)
;   7   IIR in loopback, IER = received data, a byte waiting (04h)
;   8   IRQ 4 count meanwhile (0: loopback keeps OUT2 off the bus)
;   9   IIR out of loopback, IER = THR empty (02h)
;   10  IIR read again (01h: reading IIR cleared the THR-empty interrupt)
;   11  IRQ 4 count with THR empty enabled but OUT2 clear (0)
;   12  IRQ 4 count once OUT2 is set (1)
;   13  scratch register after writing 5Ah
;   14  DLL, 15 DLM, 16 LCR read back (02h, 00h, 03h)
;   17,18  bytes received in phase 2 (low, high)
;   19,20  bytes sent in phase 2 (low, high)
;   21,22  bytes received in phase 3 (low, high)
;   23  16-bit sum of the bytes received in phase 3
;   24,25  bytes sent in phase 3 (low, high)
;   26  16-bit sum of the bytes received in phase 2
;   27  overruns seen by the IRQ handler (0)

        cpu 8086
        org 0x7C00
%include "common.inc"

COM     equ 0x3F8
RING    equ 0x3000          ; segment of the echo ring
IRQ_ECHO equ 8192           ; bytes echoed in phase 2

main:
        cli
        mov word [0x0C*4], isr_count
        mov [0x0C*4+2], cs
        in al, 0x21
        and al, 0xEF                    ; unmask IRQ 4
        out 0x21, al
        ; 57600 baud (divisor 2), 8N1: at 115200 the IRQ handler alone
        ; would take a whole character time of a 4.77 MHz 8088
        mov dx, COM+3
        mov al, 0x80
        out dx, al
        mov dx, COM
        mov al, 2
        out dx, al
        inc dx
        xor al, al
        out dx, al
        mov dx, COM+3
        mov al, 0x03
        out dx, al
        mov dx, COM+1
        xor al, al
        out dx, al                      ; IER = 0
        sti
        mov byte [RES_PHASE], 1

        ; -- loopback: modem lines and data -----------------------------------
        mov dx, COM+4
        mov al, 0x1B                    ; LOOP, OUT2, RTS, DTR
        out dx, al
        mov dx, COM+6
        in al, dx
        mov [SLOT(0)], al
        in al, dx
        mov [SLOT(1)], al
        mov dx, COM+5
        in al, dx                       ; clear anything old
        mov dx, COM
        in al, dx
        mov al, 0x41
        out dx, al
        mov dx, COM+5
        xor cx, cx
.dr:    inc cx
        in al, dx
        test al, 1
        jz .dr
        mov [SLOT(3)], cx
        mov dx, COM
        in al, dx
        mov [SLOT(2)], al
        ; overrun: two bytes, nothing read
        mov al, 0x42
        out dx, al
        mov al, 0x43
        out dx, al
        mov dx, COM+5
.temt:  in al, dx                       ; the read that sees TEMT clears OE
        test al, 0x40
        jz .temt
        mov [SLOT(4)], al
        in al, dx
        mov [SLOT(5)], al
        mov dx, COM
        in al, dx
        mov [SLOT(6)], al
        ; loopback interrupt: pending inside, nothing on IRQ 4
        mov word [irqs], 0
        mov dx, COM+1
        mov al, 1
        out dx, al
        mov dx, COM
        mov al, 0x44
        out dx, al
        mov dx, COM+5
.dr2:   in al, dx
        test al, 1
        jz .dr2
        call delay
        mov dx, COM+2
        in al, dx
        mov [SLOT(7)], al
        mov ax, [irqs]
        mov [SLOT(8)], ax
        mov dx, COM
        in al, dx
        ; -- out of loopback: THR-empty interrupt and OUT2 -----------------------
        mov dx, COM+1
        xor al, al
        out dx, al
        mov dx, COM+4
        mov al, 0x03                    ; DTR, RTS, OUT2 clear
        out dx, al
        mov word [irqs], 0
        mov dx, COM+1
        mov al, 2                       ; THR empty
        out dx, al
        mov dx, COM+2
        in al, dx
        mov [SLOT(9)], al
        in al, dx
        mov [SLOT(10)], al
        mov dx, COM+1                   ; re-arm: enabling it with THR empty
        xor al, al
        out dx, al
        mov al, 2
        out dx, al
        call delay
        mov ax, [irqs]
        mov [SLOT(11)], ax
        mov dx, COM+4
        mov al, 0x0B                    ; OUT2 on: the pending interrupt goes out
        out dx, al
        call delay
        mov ax, [irqs]
        mov [SLOT(12)], ax
        mov dx, COM+1
        xor al, al
        out dx, al
        ; -- scratch and divisor read-back ----------------------------------------
        mov dx, COM+7
        mov al, 0x5A
        out dx, al
        in al, dx
        mov [SLOT(13)], al
        mov dx, COM+3
        mov al, 0x83
        out dx, al
        mov dx, COM
        in al, dx
        mov [SLOT(14)], al
        inc dx
        in al, dx
        mov [SLOT(15)], al
        mov dx, COM+3
        mov al, 0x03
        out dx, al
        in al, dx
        mov [SLOT(16)], al

        ; -- phase 2: echo 1 MiB ------------------------------------------------------
        cli
        mov word [0x0C*4], isr_echo
        mov word [head], 0
        mov word [tail], 0
        mov dx, COM+5
        in al, dx
        mov dx, COM
        in al, dx
        mov dx, COM+1
        mov al, 1                       ; received data interrupts
        out dx, al
        mov byte [RES_PHASE], 2
        sti
echo:   mov si, [tail]
        cmp si, [head]
        je .idle
        mov dx, COM+5
        in al, dx
        test al, 0x20
        jz echo
        push ds
        mov ax, RING
        mov ds, ax
        mov al, [si]
        pop ds
        mov dx, COM
        out dx, al
        inc si
        mov [tail], si
        add word [SLOT(19)], 1
        adc word [SLOT(20)], 0
        jmp echo
.idle:  cmp word [SLOT(19)], IRQ_ECHO     ; bytes sent in phase 2
        jne echo

        ; -- phase 3: echo 1 MiB, polled (IER 0) --------------------------------------
        mov dx, COM+5                   ; the last byte out of the shift register
.last:  in al, dx
        test al, 0x40
        jz .last
        cli
        mov dx, COM+1
        xor al, al
        out dx, al                      ; no interrupts: the host's bytes wait
        mov byte [RES_PHASE], 3
        xor bx, bx                      ; bytes received (low word), high in DI
        xor di, di
        xor bp, bp                      ; sum
        mov ax, RING
        mov es, ax
        xor si, si                      ; ring: ES:SI written, ES:CX read
        xor cx, cx
poll:   mov dx, COM+5
        in al, dx
        test al, 1
        jz .tx
        mov dx, COM
        in al, dx
        mov [es:si], al
        inc si
        xor ah, ah
        add bp, ax
        add bx, 1
        adc di, 0
        mov dx, COM+5
        in al, dx
.tx:    test al, 0x20
        jz poll
        cmp cx, si
        je .check
        xchg cx, si                     ; send ES:[CX]
        mov al, [es:si]
        xchg cx, si
        mov dx, COM
        out dx, al
        inc cx
        add word [SLOT(24)], 1
        adc word [SLOT(25)], 0
        jmp poll
.check: cmp word [SLOT(25)], 0x10       ; 10_0000h bytes sent
        jne poll
        mov [SLOT(21)], bx
        mov [SLOT(22)], di
        mov [SLOT(23)], bp
        mov dx, COM+5
.last3: in al, dx
        test al, 0x40
        jz .last3
        sti
        mov si, done_msg
        jmp finish

; about 2000 cycles with interrupts on
delay:  push cx
        mov cx, 120
.d:     loop .d
        pop cx
        ret

isr_count:
        push ax
        push dx
        inc word [cs:irqs]
        mov dx, COM+2
        in al, dx                       ; identifies (and clears) THR empty
        mov al, 0x20
        out 0x20, al
        pop dx
        pop ax
        iret

isr_echo:
        push ax
        push bx
        push dx
        push ds
        xor ax, ax
        mov ds, ax
        mov dx, COM+5
        in al, dx
        test al, 2
        jz .no_oe
        inc word [SLOT(27)]
.no_oe: test al, 1
        jz .eoi
        mov dx, COM
        in al, dx
        mov bx, [head]
        push ds
        mov dx, RING
        mov ds, dx
        mov [bx], al
        pop ds
        inc bx
        mov [head], bx
        xor ah, ah
        add [SLOT(26)], ax
        add word [SLOT(17)], 1
        adc word [SLOT(18)], 0
.eoi:   mov al, 0x20
        out 0x20, al
        pop ds
        pop dx
        pop bx
        pop ax
        iret

irqs:   dw 0
head:   dw 0
tail:   dw 0
done_msg: db "serial done", 13, 10, 0

%include "tail.inc"
