; memtest.asm -- an MZ .EXE (header written out here) that checks what the
; built-in DOS (pypc) does for an EXE and for memory: the relocation, CS:IP
; and SS:SP from the header, DS = ES = PSP, and INT 21h AH=48h/49h/4Ah
; (allocate, free, resize) including their failures, and AH=62h.
; Prints "ok"/"FAIL" lines and exits with the number of failures.
;
; nasm -f bin -o memtest.exe memtest.asm

        cpu     8086

HEADER_PARAS    equ 2
STACK_PARAS     equ 40h             ; 1 KiB of stack after the program

section header start=0
        db      "MZ"
        dw      file_size % 512                 ; bytes in the last page
        dw      (file_size + 511) / 512         ; pages
        dw      1                               ; relocations
        dw      HEADER_PARAS
        dw      STACK_PARAS                     ; minimum extra paragraphs
        dw      0FFFFh                          ; maximum extra paragraphs
        dw      code_paras                      ; SS (relative)
        dw      STACK_PARAS * 16                ; SP
        dw      0                               ; checksum
        dw      start                           ; IP
        dw      0                               ; CS (relative)
        dw      reloc_table                     ; relocation table offset
        dw      0                               ; overlay
reloc_table:
        dw      fixup, 0                        ; offset, segment of the word to relocate
        times   HEADER_PARAS * 16 - ($ - $$) db 0

section code follows=header vstart=0

%include "dosmacros.inc"

code_start:
start:
        mov     [cs:psp], ds
        mov     ax, cs
        mov     ds, ax                          ; our data lives in the code segment
        mov     bx, [psp]
        add     bx, 10h                         ; the load segment
        expect  ax, bx, "CS is the load segment"
        expect  word [fixup], bx, "relocation applied"
        mov     ax, ss
        sub     ax, bx
        expect  ax, code_paras, "SS from the header"
        expect  sp, STACK_PARAS * 16, "SP from the header"
        mov     ax, es
        expect  ax, [psp], "ES is the PSP"
        mov     ah, 62h
        int     21h
        expect  bx, [psp], "get PSP"
        mov     es, bx
        expect  word [es:0], 20CDh, "PSP starts with INT 20h"

        ; shrink our block to the program and its stack
        mov     bx, 10h + code_paras + STACK_PARAS
        mov     ah, 4Ah
        int     21h
        fail_if jc, "shrink own block"
        ; the MCB of our block
        mov     ax, [psp]
        dec     ax
        mov     es, ax
        expect  byte [es:0], 'M', "our MCB is not the last"
        mov     ax, [psp]
        expect  word [es:1], ax, "our MCB is owned by our PSP"
        expect  word [es:3], 10h + code_paras + STACK_PARAS, "our MCB has the new size"

        ; allocate, write, resize, free
        mov     bx, 100h
        mov     ah, 48h
        int     21h
        fail_if jc, "allocate 4 KiB"
        mov     [block1], ax
        mov     es, ax
        mov     byte [es:0FFFh], 5Ah
        mov     bx, 0FFFFh
        mov     ah, 48h
        int     21h
        fail_if jnc, "allocating 1 MiB fails"
        expect  ax, 8, "insufficient memory error"
        mov     [largest], bx
        cmp     bx, 1000h
        fail_if jb, "largest free block reported"
        mov     ah, 48h                         ; take all that is left
        int     21h
        fail_if jc, "allocate the largest block"
        mov     [block2], ax
        mov     bx, 1
        mov     ah, 48h
        int     21h
        fail_if jnc, "nothing left"
        expect  bx, 0, "largest is now 0"
        mov     es, [block1]
        mov     bx, 200h
        mov     ah, 4Ah
        int     21h
        fail_if jnc, "growing into a used block fails"
        expect  ax, 8, "resize error"
        expect  bx, 100h, "resize reports the most it can have"
        mov     es, [block2]
        mov     ah, 49h
        int     21h
        fail_if jc, "free"
        mov     es, [block1]
        mov     bx, 200h
        mov     ah, 4Ah
        int     21h
        fail_if jc, "grow into freed memory"
        expect  byte [es:0FFFh], 5Ah, "contents kept"
        mov     ah, 49h
        int     21h
        fail_if jc, "free again"
        mov     ah, 49h
        int     21h
        fail_if jnc, "freeing twice fails"
        expect  ax, 9, "invalid block error"
        mov     ax, 5800h
        int     21h
        expect  ax, 0, "first-fit strategy"

        mov     al, [failures]
        mov     ah, 4Ch
        int     21h

%include "dosio.inc"

psp:        dw 0
fixup:      dw 0                                ; becomes the load segment
block1:     dw 0
block2:     dw 0
largest:    dw 0
failures:   db 0
            align 16
code_end:

code_paras  equ (code_end - code_start) / 16
file_size   equ HEADER_PARAS * 16 + (code_end - code_start)
