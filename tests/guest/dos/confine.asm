; confine.asm -- a guest trying to leave its --drive folder (pypc).
; A .COM program for the built-in DOS; run it in a folder holding A.TXT
; ("payload"), "long name.txt", and the host entries the guest must not
; see or reach: V (a dangling symlink), W (a symlink to a file outside),
; LDIR (a symlink to a folder outside) and FIFO (a named pipe).  Every call
; must fail with the documented DOS error, never touch what the links
; point to, and never stall.  It also calls AH=41h/43h/56h on names of the
; root and AH=29h on bytes FFh and B5h (they used to raise inside pypc).
; At the end it puts "COPY A.TXT V" and Enter into the BIOS keyboard
; buffer, so the COMMAND shell it returns to runs that line unaided.  It
; prints one "ok"/"FAIL" line per check and exits with the failure count.
;
; nasm -f bin -o confine.com confine.asm

        cpu     8086
        org     100h

%include "dosmacros.inc"

%macro try_path 4              ; AX value, DX path, expected error, "name"
        mov     ax, %1
        mov     dx, %2
        xor     cx, cx
        int     21h
        fail_if jnc, %4
        expect  ax, %3, {%4, " error"}
%endmacro

%macro try_rename 4            ; from, to, expected error, "name"
        mov     ah, 56h
        mov     dx, %1
        mov     di, %2
        int     21h
        fail_if jnc, %4
        expect  ax, %3, {%4, " error"}
%endmacro

start:
        ; -- names the guest cannot see --------------------------------------
        try_path 3C00h, n_v, 5, "create over a dangling link"
        try_path 3C00h, n_w, 5, "create over a link to a file outside"
        try_path 5B00h, n_ldir, 5, "create-new over a link to a folder"
        try_path 3D02h, n_w, 2, "open a link to a file outside"
        try_path 3D00h, n_fifo, 2, "open a FIFO"
        try_path 3D00h, n_inldir, 3, "open through a link to a folder"
        try_path 3900h, n_ldir, 5, "mkdir over a link to a folder"
        try_path 3B00h, n_ldir, 3, "chdir into a link to a folder"
        try_path 4100h, n_w, 2, "delete a link"
        try_path 4301h, n_w, 2, "set attributes of a link"
        try_rename n_a, n_w, 5, "rename onto a hidden host name"
        try_rename n_a, n_fifo_lc, 5, "rename onto a hidden name in other case"
        try_rename n_a, n_inldir, 3, "rename into a link to a folder"
        try_rename n_w, n_b, 2, "rename a link"

        ; -- names of the root ------------------------------------------------
        try_path 4100h, n_root, 2, "delete \"
        try_path 4100h, n_drive, 2, "delete C:"
        try_path 4100h, n_dot, 2, "delete ."
        try_path 4300h, n_root, 2, "attributes of \"
        try_path 4300h, n_drive, 2, "attributes of C:"
        try_path 4301h, n_dot, 2, "set attributes of ."
        try_rename n_root, n_b, 5, "rename \"
        try_rename n_a, n_drive, 5, "rename onto C:"
        try_rename n_dot, n_b, 5, "rename ."

        ; -- AH=29h on bytes FFh and B5h --------------------------------------
        mov     ax, 2900h
        mov     si, t_ff
        mov     di, fcb
        int     21h
        expect  al, 0, "parse FFh: no wildcards, no drive"
        expect  byte [fcb + 1], 0FFh, "parse FFh: the byte is kept"
        mov     ax, 2900h
        mov     si, t_b5
        mov     di, fcb
        int     21h
        expect  al, 0, "parse B5h.TXT"
        expect  byte [fcb + 1], 0B5h, "parse B5h: the byte is kept"
        expect  byte [fcb + 9], 'T', "parse B5h: the extension"

        ; -- what the guest may see still works --------------------------------
        mov     ax, 3D00h
        mov     dx, n_long
        int     21h
        fail_if jc, "open the mapped long name"
        mov     bx, ax
        mov     ah, 3Fh
        mov     cx, 4
        mov     dx, buf
        int     21h
        expect  ax, 4, "read the long-name file"
        expect  byte [buf], 'l', "long-name file data"
        mov     ah, 3Eh
        int     21h

        ; -- leave "COPY A.TXT V" + Enter for the shell ------------------------
        push    es
        mov     ax, 40h
        mov     es, ax
        cli
        mov     di, 1Eh
        mov     word [es:1Ah], di
        mov     si, keys
        mov     ah, 0
.key:   lodsb
        or      al, al
        jz      .keys_done
        stosw
        jmp     .key
.keys_done:
        mov     word [es:1Ch], di
        sti
        pop     es

        mov     ah, 4Ch
        mov     al, [failures]
        int     21h

failures: db 0
n_a:      db "A.TXT", 0
n_b:      db "B.TXT", 0
n_v:      db "V", 0
n_w:      db "W", 0
n_ldir:   db "LDIR", 0
n_inldir: db "LDIR\SECRET.TXT", 0
n_fifo:   db "FIFO", 0
n_fifo_lc: db "fifo", 0
n_long:   db "LONGNA~1.TXT", 0
n_root:   db "\", 0
n_drive:  db "C:", 0
n_dot:    db ".", 0
t_ff:     db 0FFh, 0
t_b5:     db 0B5h, ".TXT", 0
keys:     db "COPY A.TXT V", 13, 0
fcb:      times 37 db 0
buf:      times 16 db 0

%include "dosio.inc"
