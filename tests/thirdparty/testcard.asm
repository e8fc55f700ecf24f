; testcard.asm - a guest program for the third-party test card
; (tests/thirdparty/pypc_testcard): loaded at 1000:0000 after POST, it
; stores what it reads at 2000:0000 and halts.
;   +0  byte  compiled window D000:0010 after writing 5Ah (A5h)
;   +1  word  compiled window D000:0020 after writing 1234h (EDCBh)
;   +3  byte  Python window D100:0033 after writing 7
;   +4  byte  alias D300:0005 after writing 77h at D200:0005
;   +5  word  polls of port 300h until one-shot 0 expired
;   +7  byte  port 300h right after
;   +8  byte  compiled port 301h after three writes
; Assemble: nasm -f bin -o testcard.bin testcard.asm
        cpu 8086
        org 0
        cli
        mov ax, 0x2000
        mov es, ax
        xor di, di
        cld
        ; compiled window at D000:0000 (reads give stored byte XOR FFh)
        mov ax, 0xD000
        mov ds, ax
        mov byte [0x10], 0x5A
        mov al, [0x10]
        stosb                   ; A5h
        mov word [0x20], 0x1234
        mov ax, [0x20]
        stosw                   ; CBh EDh -> EDCBh
        ; Python window at D100:0000 (reads give low address byte + value count)
        mov ax, 0xD100
        mov ds, ax
        mov byte [0x33], 7
        mov al, [0x33]
        stosb
        ; the alias: write D200:0005, read D300:0005
        mov ax, 0xD200
        mov ds, ax
        mov byte [5], 0x77
        mov ax, 0xD300
        mov ds, ax
        mov al, [5]
        stosb
        ; one-shot port 300h: fire, then count polls until bit 0 drops
        mov dx, 0x300
        out dx, al
        xor cx, cx
poll:   in al, dx
        inc cx
        test al, 1
        jnz poll
        mov ax, cx
        stosw
        in al, dx
        stosb                   ; F0h | (bit 1 still running?)
        ; compiled port 301h: counts writes, reads give the count
        inc dx
        out dx, al
        out dx, al
        out dx, al
        in al, dx
        stosb
        hlt
