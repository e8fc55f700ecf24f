; fileio.asm -- file handles, directories and search under the built-in DOS
; (pypc).  A .COM program; run it in a folder holding A.TXT, B.TXT and other
; files.  It prints one "ok"/"FAIL" line per check and "found NAME" for each
; *.TXT in the root (after creating and renaming its own TEST.TXT), and exits
; with the number of failed checks.
;
; nasm -f bin -o fileio.com fileio.asm

        cpu     8086
        org     100h

%include "dosmacros.inc"

start:
        ; -- create, write, timestamp, close ------------------------------
        mov     ah, 3Ch
        xor     cx, cx
        mov     dx, fname
        int     21h
        fail_if jc, "create TEST.TXT"
        mov     [handle], ax
        mov     bx, ax
        mov     ah, 40h
        mov     cx, msglen
        mov     dx, msg
        int     21h
        fail_if jc, "write"
        expect  ax, msglen, "write count"
        mov     ax, 5701h
        mov     bx, [handle]
        mov     cx, 0BF7Dh              ; 23:59:58
        mov     dx, 279Fh               ; 1999-12-31
        int     21h
        fail_if jc, "set date and time"
        mov     ah, 3Eh
        mov     bx, [handle]
        int     21h
        fail_if jc, "close"
        mov     ah, 3Eh
        mov     bx, [handle]
        int     21h
        fail_if jnc, "close twice fails"
        expect  ax, 6, "invalid handle error"

        ; -- open, timestamp, seek, read ------------------------------------
        mov     ax, 3D00h
        mov     dx, fname
        int     21h
        fail_if jc, "open for reading"
        mov     [handle], ax
        mov     ax, 5700h
        mov     bx, [handle]
        int     21h
        expect  cx, 0BF7Dh, "get time"
        expect  dx, 279Fh, "get date"
        mov     ax, 4200h
        mov     bx, [handle]
        xor     cx, cx
        mov     dx, 6
        int     21h
        expect  ax, 6, "seek from start"
        mov     ah, 3Fh
        mov     bx, [handle]
        mov     cx, 5
        mov     dx, buf
        int     21h
        expect  ax, 5, "read count"
        mov     si, buf
        mov     di, msg + 6
        mov     cx, 5
        cld
        repe    cmpsb
        fail_if jne, "read data"
        mov     ax, 4202h
        mov     bx, [handle]
        xor     cx, cx
        xor     dx, dx
        int     21h
        expect  ax, msglen, "seek to end gives the size"
        mov     ah, 3Fh
        mov     bx, [handle]
        mov     cx, 5
        mov     dx, buf
        int     21h
        expect  ax, 0, "read at end of file"
        mov     ah, 40h
        mov     bx, [handle]
        mov     cx, 1
        mov     dx, buf
        int     21h
        fail_if jnc, "write to a read-only handle fails"
        expect  ax, 5, "access denied error"
        mov     ah, 3Eh
        mov     bx, [handle]
        int     21h

        ; -- errors ---------------------------------------------------------
        mov     ax, 3D00h
        mov     dx, missing
        int     21h
        fail_if jnc, "open a missing file fails"
        expect  ax, 2, "file not found error"
        mov     ah, 59h
        xor     bx, bx
        int     21h
        expect  ax, 2, "extended error"
        mov     ax, 3D00h
        mov     dx, escape
        int     21h
        fail_if jnc, "a path above the root is refused"
        expect  ax, 3, "path not found error"

        ; -- rename, directories ------------------------------------------
        mov     ah, 56h
        mov     dx, fname
        mov     di, fname2
        int     21h
        fail_if jc, "rename"
        mov     ah, 39h
        mov     dx, subdir
        int     21h
        fail_if jc, "mkdir"
        mov     ah, 3Bh
        mov     dx, subdir
        int     21h
        fail_if jc, "chdir"
        mov     ah, 47h
        xor     dl, dl
        mov     si, buf
        int     21h
        fail_if jc, "getcwd"
        mov     si, buf
        mov     di, subdir
        mov     cx, 4
        repe    cmpsb
        fail_if jne, "current directory is SUB"
        mov     ah, 3Ch
        xor     cx, cx
        mov     dx, inner
        int     21h
        fail_if jc, "create in the subdirectory"
        mov     bx, ax
        mov     ah, 3Eh
        int     21h
        mov     ah, 3Bh
        mov     dx, dotdot
        int     21h
        fail_if jc, "chdir .."
        mov     ah, 3Ah
        mov     dx, subdir
        int     21h
        fail_if jnc, "rmdir of a non-empty folder fails"

        ; -- search ---------------------------------------------------------
        mov     ah, 1Ah
        mov     dx, dta
        int     21h
        mov     ah, 2Fh
        int     21h
        expect  bx, dta, "get DTA"
        mov     ah, 4Eh
        xor     cx, cx
        mov     dx, pattern
        int     21h
        fail_if jc, "find first"
.found: jc      .searched
        mov     dx, found
        call    print
        mov     si, dta + 30
        call    print_z
        mov     ah, 4Fh
        int     21h
        jmp     .found
.searched:
        expect  ax, 12h, "no more files"
        mov     ah, 4Eh
        mov     cx, 10h
        mov     dx, subpattern
        int     21h
        fail_if jc, "find first in SUB"
        expect  byte [dta + 30], '.', "first entry is ."
        expect  byte [dta + 21], 10h, "with the directory attribute"
        mov     ah, 4Fh
        int     21h
        mov     ah, 4Fh
        int     21h
        fail_if jc, "third entry"
        mov     si, dta + 30
        mov     di, innername
        mov     cx, 10
        repe    cmpsb
        fail_if jne, "third entry is INNER.DAT"

        ; -- delete, rmdir --------------------------------------------------
        mov     ah, 41h
        mov     dx, inner2
        int     21h
        fail_if jc, "delete"
        mov     ah, 3Ah
        mov     dx, subdir
        int     21h
        fail_if jc, "rmdir"

        ; -- devices --------------------------------------------------------
        mov     ax, 3D01h
        mov     dx, nul
        int     21h
        fail_if jc, "open NUL"
        mov     bx, ax
        mov     ah, 40h
        mov     cx, 3
        mov     dx, msg
        int     21h
        expect  ax, 3, "write to NUL"
        mov     ax, 4400h
        int     21h
        expect  dx, 8084h, "NUL is a device"
        mov     ah, 40h
        mov     bx, 1
        mov     cx, viahlen
        mov     dx, viah
        int     21h
        expect  ax, viahlen, "write to standard output"
        mov     ah, 36h
        mov     dl, 0
        int     21h
        cmp     ax, 0FFFFh
        fail_if je, "free space"

        mov     al, [failures]
        mov     ah, 4Ch
        int     21h

%include "dosio.inc"

failures:   db 0
handle:     dw 0
fname:      db "TEST.TXT", 0
fname2:     db "RENAMED.TXT", 0
missing:    db "NOSUCH.TXT", 0
escape:     db "..\..\ETC\PASSWD", 0
subdir:     db "SUB", 0
dotdot:     db "..", 0
inner:      db "INNER.DAT", 0
inner2:     db "SUB\INNER.DAT", 0
innername:  db "INNER.DAT", 0
pattern:    db "*.TXT", 0
subpattern: db "SUB\*.*", 0
nul:        db "NUL", 0
found:      db "found $"
viah:       db "written through handle 1", 13, 10
viahlen     equ $ - viah
msg:        db "Hello file world", 13, 10
msglen      equ $ - msg
buf:        times 80 db 0
dta:        times 43 db 0
