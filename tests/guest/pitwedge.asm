; Issue 6 regression: read 8253 counter 0 before it first wraps (the read
; that once wedged the core for good), then print OK in CGA memory.
        cpu 8086
        org 0x7C00
        mov ax, 0xB800
        mov ds, ax
        in al, 0x40             ; counter 0, live count, LSB first
        mov word [0], 0x0F4F    ; 'O'
        mov word [2], 0x0F4B    ; 'K'
        jmp $
        times 510-($-$$) db 0
        dw 0xAA55
