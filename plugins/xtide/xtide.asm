; xtide.asm - option ROM of pypc's XT-IDE style hard-disk card (written for
; pypc; assembled with nasm -f bin, committed as xtide_rom.bin)
;
; The card: an ATA task file at 300h-307h with 8-bit data transfers through
; 300h, device control at 30Eh, no interrupt line (polled).  This ROM, found
; by the system BIOS's option-ROM scan at D000:0000, makes the drive BIOS
; drive 80h for any XT BIOS:
;   * if 0040:0075 (hard disks) is already non-zero, another disk BIOS serves
;     drive 80h and the ROM does nothing;
;   * otherwise it asks the drive for its geometry (IDENTIFY DEVICE), takes
;     1 KiB from the top of conventional memory (0040:0013) for a fixed
;     disk parameter table (INT 41h points at it), moves the old INT 13h to
;     INT 40h, hooks INT 13h and counts one hard disk.
; INT 13h for DL=80h: 00h reset, 01h status, 02h read, 03h write,
; 04h verify, 08h parameters, 09h/0Ch/0Dh/10h/11h/12h/13h/14h succeed,
; 15h type (03h, CX:DX sectors); anything else 01h.  DL below 80h goes to
; the old handler (INT 40h); other hard-disk numbers answer 01h.  Status in
; AH and 0040:0074, CF on error; AL = sectors done for 02h/03h/04h.
; A third-party BIOS's INT 19h reads C: through this, so it boots C:.

        cpu 8086
        org 0

BASE    equ 0x300
R_DATA  equ BASE + 0
R_ERR   equ BASE + 1
R_COUNT equ BASE + 2
R_SECT  equ BASE + 3
R_CYLLO equ BASE + 4
R_CYLHI equ BASE + 5
R_HEAD  equ BASE + 6
R_CMD   equ BASE + 7            ; status when read
R_CTRL  equ BASE + 0x0E

ST_BSY  equ 0x80
ST_DRQ  equ 0x08
ST_ERR  equ 0x01

        db 0x55, 0xAA, 4            ; 2 KiB
        jmp init

; ---------------------------------------------------------------------------
; wait until BSY is clear; ZF clear on time-out (status in AL)
wait_ready:
        push cx
        push dx
        mov dx, R_CMD
        xor cx, cx
.l:     in al, dx
        test al, ST_BSY
        jz .ok
        loop .l
        or al, 1                    ; timed out (ZF clear)
        pop dx
        pop cx
        ret
.ok:    cmp al, al                  ; ZF set
        pop dx
        pop cx
        ret

; wait for DRQ or an error; CF set if the drive reported an error / timed out
wait_drq:
        call wait_ready
        jnz .bad
        test al, ST_ERR
        jnz .bad
        test al, ST_DRQ
        jz .bad
        clc
        ret
.bad:   stc
        ret

; ---------------------------------------------------------------------------
init:
        push ax
        push bx
        push cx
        push dx
        push si
        push di
        push ds
        push es
        xor ax, ax
        mov ds, ax
        cmp byte [0x475], 0
        jne .done                   ; another BIOS already has drive 80h
        mov dx, R_CMD
        in al, dx
        cmp al, 0xFF
        je .done                    ; nothing on the bus
        ; IDENTIFY DEVICE into the top 1 KiB of conventional memory
        mov ax, [0x413]
        dec ax
        mov [0x413], ax
        mov cl, 6
        shl ax, cl
        mov es, ax
        mov dx, R_HEAD
        mov al, 0xA0
        out dx, al
        mov dx, R_CMD
        mov al, 0xEC
        out dx, al
        call wait_drq
        jc .undo
        mov di, 0x100
        mov cx, 512
        mov dx, R_DATA
        cld
.id:    in al, dx
        stosb
        loop .id
        ; the fixed disk parameter table at ES:0000 (16 bytes)
        xor di, di
        mov cx, 8
        xor ax, ax
        rep stosw
        mov ax, [es:0x100 + 2]      ; word 1: cylinders
        mov [es:0], ax
        mov al, [es:0x100 + 6]      ; word 3: heads
        mov [es:2], al
        mov al, [es:0x100 + 12]     ; word 6: sectors per track
        mov [es:14], al
        ; vectors: INT 41h -> the table, INT 40h <- the old INT 13h, INT 13h -> us
        cli
        mov word [0x41 * 4], 0
        mov [0x41 * 4 + 2], es
        mov ax, [0x13 * 4]
        mov [0x40 * 4], ax
        mov ax, [0x13 * 4 + 2]
        mov [0x40 * 4 + 2], ax
        mov word [0x13 * 4], int13
        mov [0x13 * 4 + 2], cs
        sti
        inc byte [0x475]
        mov byte [0x474], 0
        mov si, msg
.pr:    cs lodsb
        or al, al
        jz .done
        mov ah, 0x0E
        mov bx, 0x0007
        int 0x10
        jmp .pr
.undo:  inc word [0x413]            ; no drive after all: give the memory back
.done:  pop es
        pop ds
        pop di
        pop si
        pop dx
        pop cx
        pop bx
        pop ax
        retf

msg:    db "pypc XT-IDE: drive 80h", 13, 10, 0

; ---------------------------------------------------------------------------
int13:
        cmp dl, 0x80
        jae .ours
        int 0x40                    ; floppies: the system BIOS
        retf 2
.ours:  sti
        cld
        push bx
        push cx
        push dx
        push si
        push di
        push bp
        push ds
        push es
        cmp dl, 0x80
        jne .nodrive
        mov bp, sp
        cmp ah, 0x01
        je .status
        mov bl, ah
        xor bh, bh
        cmp bl, 0x15
        ja .badfn
        shl bx, 1
        jmp [cs:bx + table]
.nodrive:
        mov ah, 0x01
        jmp .out
.badfn: mov ah, 0x01
        jmp .out
.status:
        push ds
        xor bx, bx
        mov ds, bx
        mov ah, [0x474]
        pop ds
        mov al, ah
        or ah, ah
        jz .ret_ok
        jmp .ret_err

; AH = status: store it, set CF, return (AL as set)
.out:   push ds
        xor bx, bx
        mov ds, bx
        mov [0x474], ah
        pop ds
        or ah, ah
        jnz .ret_err
.ret_ok:
        pop es
        pop ds
        pop bp
        pop di
        pop si
        pop dx
        pop cx
        pop bx
        clc
        retf 2
.ret_err:
        pop es
        pop ds
        pop bp
        pop di
        pop si
        pop dx
        pop cx
        pop bx
        stc
        retf 2

table:  dw fn_ok, fn_bad, fn_read, fn_write, fn_verify, fn_bad, fn_bad, fn_bad
        dw fn_parms, fn_ok, fn_bad, fn_bad, fn_ok, fn_ok, fn_bad, fn_bad
        dw fn_ok, fn_ok, fn_ok, fn_ok, fn_ok, fn_type

fn_ok:  xor ah, ah
        jmp int13.out
fn_bad: mov ah, 0x01
        jmp int13.out

; DS:SI -> the parameter table (INT 41h)
table_ptr:
        xor si, si
        mov ds, si
        lds si, [0x41 * 4]
        ret

fn_parms:
        call table_ptr
        mov ax, [si]                ; cylinders
        dec ax                      ; the last one
        mov ch, al
        mov cl, ah
        ror cl, 1
        ror cl, 1
        and cl, 0xC0
        or cl, [si + 14]            ; sectors
        mov dh, [si + 2]
        dec dh                      ; last head
        xor bx, bx
        mov ds, bx
        mov dl, [0x475]
        ; return CX, DX too: overwrite their saved copies
        mov [bp + 12], cx
        mov [bp + 10], dx
        xor ax, ax
        jmp int13.out

fn_type:
        call table_ptr
        mov ax, [si]
        mov bl, [si + 2]
        xor bh, bh
        mul bx                      ; cylinders x heads (DX:AX)
        mov bl, [si + 14]
        mov cx, dx
        mul bx                      ; low part x sectors
        push ax
        push dx
        mov ax, cx
        mul bx                      ; high part x sectors
        pop dx
        add dx, ax
        pop ax
        mov [bp + 12], dx           ; CX = high word
        mov [bp + 10], ax           ; DX = low word
        mov ah, 0x03
        push ds
        xor bx, bx
        mov ds, bx
        mov byte [0x474], 0
        pop ds
        jmp int13.ret_ok

; the task file from the caller's CX, DX, AL; command in BL
; (AX, CX, DX as at entry: restored from the stack)
issue:
        push ax
        mov dx, R_COUNT
        out dx, al
        mov dx, R_SECT
        mov al, [bp + 12]
        and al, 0x3F
        out dx, al
        mov al, [bp + 13]           ; CH: cylinder bits 0-7
        mov dx, R_CYLLO
        out dx, al
        mov al, [bp + 12]
        rol al, 1
        rol al, 1
        and al, 0x03                ; cylinder bits 8-9
        mov dx, R_CYLHI
        out dx, al
        mov al, [bp + 11]           ; DH: head
        and al, 0x0F
        or al, 0xA0
        mov dx, R_HEAD
        out dx, al
        call wait_ready
        mov al, bl
        mov dx, R_CMD
        out dx, al
        pop ax
        ret

; AH = status from the error register after a failed command
drive_error:
        mov dx, R_ERR
        in al, dx
        mov ah, 0x04                ; IDNF: sector not found
        test al, 0x10
        jnz .e
        mov ah, 0x10                ; UNC: uncorrectable data
        test al, 0x40
        jnz .e
        mov ah, 0x03                ; (write fault on a protected image)
        test al, 0x20
        jnz .e
        mov ah, 0x01                ; aborted
.e:     ret

fn_read:
        or al, al
        jz fn_bad
        mov bl, 0x20
        call issue
        mov cl, al                  ; sectors asked
        xor ch, ch
        xor si, si                  ; sectors done
        mov di, [bp + 14]           ; BX: the buffer offset (ES unchanged)
.sec:   call wait_drq
        jc .err
        push cx
        mov cx, 512
        mov dx, R_DATA
.b:     in al, dx
        stosb
        loop .b
        pop cx
        inc si
        loop .sec
        mov ax, si
        xor ah, ah
        jmp int13.out
.err:   call drive_error
        mov bx, si
        mov al, bl
        jmp int13.out

fn_write:
        or al, al
        jz fn_bad
        mov bl, 0x30
        call issue
        mov cl, al
        xor ch, ch
        xor di, di                  ; sectors done
        mov si, [bp + 14]           ; ES:BX -> DS:SI
        push es
        pop ds
.sec:   call wait_drq
        jc .err
        push cx
        mov cx, 512
        mov dx, R_DATA
.b:     lodsb
        out dx, al
        loop .b
        pop cx
        inc di
        loop .sec
        call wait_ready
        test al, ST_ERR
        jnz .err2
        mov ax, di
        xor ah, ah
        jmp int13.out
.err2:  dec di
.err:   call drive_error
        mov bx, di
        mov al, bl
        jmp int13.out

fn_verify:
        or al, al
        jz fn_bad
        mov bl, 0x40
        call issue
        mov cl, al
        call wait_ready
        test al, ST_ERR
        jnz .err
        mov al, cl
        xor ah, ah
        jmp int13.out
.err:   call drive_error
        xor al, al
        jmp int13.out

        times 2047 - ($ - $$) db 0xFF
        db 0                        ; checksum (set by the build)
