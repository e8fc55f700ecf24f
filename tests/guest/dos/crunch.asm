; crunch.asm -- a CPU-heavy program for the block translator's tests: a
; sieve of Eratosthenes over 0..7FFFh, a CRC-16 (polynomial A001h) over the
; sieve, a bubble sort of 200 words, and a table of its progress written
; straight into CGA text memory (B800h, a card's memory: every such write
; goes through the interpreter).  Prints "primes=NNNNN crc=XXXX" and exits
; with the CRC's low byte.
;
; nasm -f bin -o crunch.com crunch.asm

        cpu     8086
        org     100h

SIEVE   equ     8000h           ; bytes (one per number)

start:
        ; --- sieve: sieve[i] = 1 for composite i -------------------------
        mov     ax, cs
        add     ax, 1000h       ; a segment 64 KiB above the program
        mov     es, ax
        xor     di, di
        mov     cx, SIEVE / 2
        xor     ax, ax
        cld
        rep     stosw           ; clear it (REP: the interpreter's)
        mov     bx, 2
.outer: mov     ax, bx
        mul     bx
        jc      .count          ; bx*bx past 64 Ki: done
        cmp     ax, SIEVE
        jae     .count
        cmp     byte [es:bx], 0
        jne     .next
        mov     di, ax
.mark:  mov     byte [es:di], 1
        add     di, bx
        jc      .next
        cmp     di, SIEVE
        jb      .mark
.next:  inc     bx
        call    progress
        jmp     .outer
.count: xor     si, si
        xor     dx, dx
        mov     cx, SIEVE - 2
        mov     si, 2
.cnt:   cmp     byte [es:si], 0
        jne     .comp
        inc     dx
.comp:  inc     si
        loop    .cnt
        mov     [primes], dx
        ; --- CRC-16 over the sieve ----------------------------------------
        xor     si, si
        mov     cx, SIEVE
        mov     dx, 0FFFFh
.crc:   mov     al, [es:si]
        xor     dl, al
        mov     ah, 8
.bit:   shr     dx, 1
        jnc     .nox
        xor     dx, 0A001h
.nox:   dec     ah
        jnz     .bit
        inc     si
        loop    .crc
        mov     [crc], dx
        ; --- bubble sort of 200 pseudo-random words -------------------------
        mov     di, table
        mov     cx, 200
        mov     ax, dx
.fill:  mov     bx, ax
        shl     ax, 1
        xor     ax, bx
        add     ax, 3579h
        mov     [di], ax
        add     di, 2
        loop    .fill
        mov     dx, 199
.pass:  mov     si, table
        mov     cx, dx
.cmp:   mov     ax, [si]
        cmp     ax, [si+2]
        jbe     .ok
        xchg    ax, [si+2]
        mov     [si], ax
.ok:    add     si, 2
        loop    .cmp
        call    progress
        dec     dx
        jnz     .pass
        ; --- print and exit --------------------------------------------------
        mov     ax, [primes]
        mov     di, msg_primes
        call    decimal
        mov     ax, [crc]
        mov     di, msg_crc
        call    hex4
        mov     dx, msg
        mov     ah, 9
        int     21h
        mov     ax, [crc]
        mov     ah, 4Ch
        int     21h

; progress: a spinning character and a counter in the top-right corner
progress:
        push    ax
        push    es
        push    di
        mov     ax, 0B800h
        mov     es, ax
        inc     word [ticks]
        mov     ax, [ticks]
        mov     di, 79 * 2
        and     al, 3
        add     al, '0'
        mov     ah, 1Eh
        mov     [es:di], ax
        pop     di
        pop     es
        pop     ax
        ret

; decimal: AX as five digits at DS:DI
decimal:
        push    bx
        push    cx
        push    dx
        mov     bx, 10
        add     di, 4
        mov     cx, 5
.d:     xor     dx, dx
        div     bx
        add     dl, '0'
        mov     [di], dl
        dec     di
        loop    .d
        pop     dx
        pop     cx
        pop     bx
        ret

; hex4: AX as four hex digits at DS:DI
hex4:
        push    cx
        mov     cx, 4
.h:     rol     ax, 1
        rol     ax, 1
        rol     ax, 1
        rol     ax, 1
        push    ax
        and     al, 0Fh
        add     al, '0'
        cmp     al, '9'
        jbe     .dig
        add     al, 7
.dig:   mov     [di], al
        inc     di
        pop     ax
        loop    .h
        pop     cx
        ret

msg:            db      "primes="
msg_primes:     db      "00000 crc="
msg_crc:        db      "0000", 13, 10, "$"
primes:         dw      0
crc:            dw      0
ticks:          dw      0
table:          times 200 dw 0
