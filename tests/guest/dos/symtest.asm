; symtest.asm -- an MZ .EXE in two code segments for the symbol tests
; (tests/test_symbols.py): the link maps written beside it there
; (SYMTEST.MAP and the other formats) name start, again, counter (segment
; 0000h of the image) and helper (segment 0002h), so a breakpoint on
; "helper" must land at the load segment + 2.  start calls helper three
; times through a relocated far call; helper counts in counter; the program
; exits with the count (3).
;
; nasm -f bin -o symtest.exe symtest.asm

        cpu     8086

HEADER_PARAS    equ 2
STACK_PARAS     equ 20h

section header start=0
        db      "MZ"
        dw      file_size % 512                 ; bytes in the last page
        dw      (file_size + 511) / 512         ; pages
        dw      1                               ; relocations
        dw      HEADER_PARAS
        dw      STACK_PARAS                     ; minimum extra paragraphs
        dw      0FFFFh                          ; maximum extra paragraphs
        dw      image_paras                     ; SS (relative)
        dw      STACK_PARAS * 16                ; SP
        dw      0                               ; checksum
        dw      start                           ; IP
        dw      0                               ; CS (relative)
        dw      reloc_table                     ; relocation table offset
        dw      0                               ; overlay
reloc_table:
        dw      fixup, 0                        ; offset, segment of the word to relocate
        times   HEADER_PARAS * 16 - ($ - $$) db 0

section text follows=header vstart=0            ; image segment 0000h
start:                                          ; 0000:0000
        mov     ax, cs
        mov     ds, ax
        mov     cx, 3
again:                                          ; 0000:0007
        db      9Ah                             ; call far 0002:helper (relocated)
        dw      helper
fixup:  dw      2
        loop    again
        mov     al, [counter]
        mov     ah, 4Ch
        int     21h
counter:                                        ; 0000:0015
        db      0
        times   20h - ($ - $$) db 90h

section helper_text follows=text vstart=0       ; image segment 0002h
helper:                                         ; 0002:0000
        inc     byte [counter]
        retf
        times   10h - ($ - $$) db 90h

image_paras     equ 3
file_size       equ HEADER_PARAS * 16 + image_paras * 16
