; timer.asm - INT 1Ah, the BIOS tick and the 8253 through its ports
; (pypc guest test program)
;
; Phases (byte 0000:0602) and what the test does in them:
;   1  BIOS tick running; the program wakes on every interrupt and checks
;      INT 1Ah AH=00h against 0040:006C (test: runs N emulated seconds,
;      counts ticks, then types a key)
;   2  latching channel 0 (OUT 43h,00h; IN 40h twice)
;   3  channel 0 reprogrammed to mode 2, divisor 11932 (100 Hz) with the
;      program's own INT 08h handler counting IRQ 0 (test: runs N seconds,
;      counts, types a key); afterwards the BIOS rate and vector come back
;   4  channel 2: gate (61h bit 0) and output (62h bit 5)
;
; Results (word slots at 0610h + 2*n):
;   0,1  CX, DX of AH=00h right after AH=01h set 0018h:009Ch (20 ticks
;        before midnight)         2  AL of that call (0: no midnight yet)
;   3,4  0040:006E, 0040:006C right after (the same count)
;   5,6  CX, DX of the last AH=00h in phase 1 (high, low)
;   7    phase 1 wakes where AH=00h and 0040:006C differed (expect 0)
;   8    phase 1 calls that returned AL != 0 (midnight passed; expect 1)
;   9    phase 1 wakes (one per interrupt: each tick, and the key's make
;        and break codes)
;   10,11 channel 0 latched twice, about 450 cycles apart (BIOS mode 3:
;        counts down by 2)
;   12   IRQ 0 count of the program's own handler (phase 3)
;   13,14 channel 0 latched twice in mode 2 (counts down by 1)
;   15   toggles of 62h bit 5 during one tick, channel 2 mode 3,
;        divisor 1000, gate on (2 * 65536 / 1000 = 131)
;   16   the same with the gate off (0)
;   17   62h bit 5 with the gate off in mode 3 (20h: output held high)
;   18   62h bit 5 right after channel 2 was set to mode 0 (0: low)
;   19   62h bit 5 after ~30000 cycles with the gate still off (0: held)
;   20   polls of 62h after the gate went on until bit 5 rose (count
;        4096 = 16384 cycles)
;   21   0040:006C low word before phase 3,   22  after phase 3

        cpu 8086
        org 0x7C00
%include "common.inc"

main:
        ; AH=01h: set the count 20 ticks before midnight (1800B0h ticks/day)
        mov ah, 0x01
        mov cx, 0x0018
        mov dx, 0x009C
        int 0x1A
        cli
        xor ah, ah
        int 0x1A
        mov [SLOT(0)], cx
        mov [SLOT(1)], dx
        xor ah, ah
        mov [SLOT(2)], ax
        mov ax, [BDA_TICKS + 2]
        mov [SLOT(3)], ax
        mov ax, [BDA_TICKS]
        mov [SLOT(4)], ax
        sti

        ; phase 1: wake on each interrupt, INT 1Ah against the data area
        mov byte [RES_PHASE], 1
.p1:    cli
        mov bx, [BDA_TICKS]
        mov si, [BDA_TICKS + 2]
        xor ah, ah
        int 0x1A
        cli
        cmp dx, bx
        jne .bad
        cmp cx, si
        je .good
.bad:   inc word [SLOT(7)]
.good:  mov [SLOT(5)], cx
        mov [SLOT(6)], dx
        or al, al
        jz .nomid
        inc word [SLOT(8)]
.nomid: inc word [SLOT(9)]
        sti
        hlt
        call key_ready
        jz .p1
        xor ah, ah
        int 0x16

        ; phase 2: latch channel 0 twice (BIOS programming: mode 3)
        mov byte [RES_PHASE], 2
        cli
        call latch0
        mov [SLOT(10)], ax
        mov cx, 20
.d1:    loop .d1
        call latch0
        mov [SLOT(11)], ax
        sti

        ; phase 3: our own IRQ 0 handler, channel 0 at 100 Hz (mode 2)
        call wait_tick
        mov ax, [BDA_TICKS]
        mov [SLOT(21)], ax
        cli
        mov ax, [0x20]
        mov [old08], ax
        mov ax, [0x22]
        mov [old08 + 2], ax
        mov word [0x20], irq0
        mov word [0x22], 0
        mov al, 0x34                ; channel 0, LSB then MSB, mode 2, binary
        out 0x43, al
        mov ax, 11932
        out 0x40, al
        mov al, ah
        out 0x40, al
        mov word [SLOT(12)], 0
        sti
        hlt                         ; the new count is running after one IRQ
        cli
        call latch0
        mov [SLOT(13)], ax
        mov cx, 20
.d2:    loop .d2
        call latch0
        mov [SLOT(14)], ax
        sti
        mov byte [RES_PHASE], 3
.p3:    hlt
        call key_ready
        jz .p3
        xor ah, ah
        int 0x16
        ; back to the BIOS: mode 3, count 65536, its vector
        cli
        mov al, 0x36
        out 0x43, al
        xor al, al
        out 0x40, al
        out 0x40, al
        mov ax, [old08]
        mov [0x20], ax
        mov ax, [old08 + 2]
        mov [0x22], ax
        sti
        mov ax, [BDA_TICKS]
        mov [SLOT(22)], ax
        call wait_tick              ; the BIOS tick runs again

        ; phase 4: channel 2, gated by 61h bit 0, output on 62h bit 5
        mov byte [RES_PHASE], 4
        in al, 0x61
        mov [saved61], al
        and al, 0xFC                ; speaker data off
        or al, 0x01                 ; gate on
        out 0x61, al
        mov al, 0xB6                ; channel 2, LSB then MSB, mode 3, binary
        out 0x43, al
        mov ax, 1000
        out 0x42, al
        mov al, ah
        out 0x42, al
        call wait_tick
        call toggles
        mov [SLOT(15)], cx
        in al, 0x61                 ; gate off
        and al, 0xFE
        out 0x61, al
        call wait_tick
        call toggles
        mov [SLOT(16)], cx
        xor ah, ah
        mov [SLOT(17)], ax
        ; mode 0 (one shot) with the gate off: output low, count held
        mov al, 0xB0
        out 0x43, al
        mov ax, 4096
        out 0x42, al
        mov al, ah
        out 0x42, al
        in al, 0x62
        and ax, 0x20
        mov [SLOT(18)], ax
        mov cx, 2000
.d3:    loop .d3
        in al, 0x62
        and ax, 0x20
        mov [SLOT(19)], ax
        in al, 0x61                 ; gate on: the count runs out
        or al, 0x01
        out 0x61, al
        xor cx, cx
.rise:  inc cx
        in al, 0x62
        test al, 0x20
        jz .rise
        mov [SLOT(20)], cx
        mov al, [saved61]
        out 0x61, al

        ; summary
        mov si, s_ticks
        mov bx, SLOT(5)
        call show
        mov si, empty
        mov bx, SLOT(6)
        call show
        mov si, s_mism
        mov bx, SLOT(7)
        call show
        mov si, s_irq
        mov bx, SLOT(12)
        call show
        call newline
        mov si, s_latch
        mov bx, SLOT(10)
        call show
        mov si, empty
        mov bx, SLOT(11)
        call show
        mov bx, SLOT(13)
        call show
        mov bx, SLOT(14)
        call show
        call newline
        mov si, s_ch2
        mov bx, SLOT(15)
        call show
        mov si, empty
        mov bx, SLOT(16)
        call show
        mov bx, SLOT(20)
        call show
        call newline
        mov si, s_done
        jmp finish

; ZF = 0 if the BIOS keyboard buffer holds a key.  The buffer pointers are
; compared directly (as many programs do) rather than with INT 16h AH=01h,
; which the built-in BIOS turns into a wait for the next interrupt when it
; is polled in a tight loop: this loop must wake once per interrupt.
key_ready:
        push ax
        mov ax, [0x041A]
        cmp ax, [0x041C]
        pop ax
        ret

; AX = channel 0 count, latched (OUT 43h,00h), read LSB then MSB
latch0:
        xor al, al
        out 0x43, al
        in al, 0x40
        mov ah, al
        in al, 0x40
        xchg al, ah
        ret

; CX = changes of 62h bit 5 until the BIOS tick count changes;
; AL = the last level (bit 5)
toggles:
        push bx
        push dx
        mov bx, [BDA_TICKS]
        xor cx, cx
        in al, 0x62
        and al, 0x20
        mov dl, al
.l:     in al, 0x62
        and al, 0x20
        cmp al, dl
        je .s
        mov dl, al
        inc cx
.s:     cmp bx, [BDA_TICKS]
        je .l
        mov al, dl
        pop dx
        pop bx
        ret

; the program's IRQ 0 handler for phase 3
irq0:
        inc word [cs:SLOT(12)]
        push ax
        mov al, 0x20
        out 0x20, al
        pop ax
        iret

old08:      dd 0
saved61:    db 0
s_ticks:    db "TICKS ", 0
s_mism:     db "MISMATCH ", 0
s_irq:      db "IRQ100 ", 0
s_latch:    db "LATCH ", 0
s_ch2:      db "CH2 ", 0
s_done:     db "TIMER DONE", 0
empty:      db 0

%include "tail.inc"
