; dostrace.asm -- a fixed sequence of DOS file, directory, program and
; memory calls for the dos.trace.* tests (pypc).  A .COM program; run it in
; a folder holding CHILD.COM (child.asm) and no DATA.TMP, RENAMED.TMP,
; MISSING.DAT or SUB.  (No line here may end in a backslash: NASM would
; join the next line to it.)  tests/test_dos_trace.py expects exactly these
; calls, in this order, with their results:
;
;   4Ah resize to 4 KiB, 3Ch create DATA.TMP, 40h write 16 bytes, 44h/00h,
;   42h seek to 4 from the start, 3Fh read 6, 42h seek to -2 from the end,
;   3Fh read 8 (gets 2), 3Eh close, 3Eh close again (error 6), 3Dh open
;   MISSING.DAT (error 2), 0Fh FCB open (not provided), 56h rename to
;   RENAMED.TMP, 39h mkdir SUB, 3Bh chdir SUB, 47h current folder, 3Bh chdir
;   to the root, 3Ah rmdir SUB, 4Eh find *.TMP, 4Fh find next (error 18),
;   41h delete RENAMED.TMP, 41h again (error 2), 40h write "done" to
;   handle 1, 4Bh/00h exec CHILD.COM " hi" (which exits with 42), 4Dh,
;   4Ch exit 7.
;
; nasm -f bin -o dostrace.com dostrace.asm

        cpu     8086
        org     100h

start:
        mov     sp, stack_top
        mov     bx, (stack_top - $$ + 100h + 15) / 16
        mov     ah, 4Ah
        int     21h

        mov     ah, 3Ch                 ; create DATA.TMP
        xor     cx, cx
        mov     dx, fname
        int     21h
        mov     [handle], ax
        mov     bx, ax
        mov     ah, 40h                 ; write 16 bytes
        mov     cx, 16
        mov     dx, data
        int     21h
        mov     ax, 4400h               ; IOCTL: device information
        mov     bx, [handle]
        int     21h
        mov     ax, 4200h               ; seek to 4 from the start
        mov     bx, [handle]
        xor     cx, cx
        mov     dx, 4
        int     21h
        mov     ah, 3Fh                 ; read 6
        mov     bx, [handle]
        mov     cx, 6
        mov     dx, buf
        int     21h
        mov     ax, 4202h               ; seek to -2 from the end
        mov     bx, [handle]
        mov     cx, 0FFFFh
        mov     dx, 0FFFEh
        int     21h
        mov     ah, 3Fh                 ; read 8: only 2 are left
        mov     bx, [handle]
        mov     cx, 8
        mov     dx, buf
        int     21h
        mov     ah, 3Eh                 ; close
        mov     bx, [handle]
        int     21h
        mov     ah, 3Eh                 ; close again: invalid handle
        mov     bx, [handle]
        int     21h

        mov     ax, 3D00h               ; open a missing file: error 2
        mov     dx, missing
        int     21h
        mov     ah, 0Fh                 ; FCB open: the built-in DOS has none
        mov     dx, fcb
        int     21h
        mov     ah, 56h                 ; rename DATA.TMP to RENAMED.TMP
        mov     dx, fname
        mov     di, newname
        int     21h

        mov     ah, 39h                 ; mkdir SUB
        mov     dx, subdir
        int     21h
        mov     ah, 3Bh                 ; chdir SUB
        mov     dx, subdir
        int     21h
        mov     ah, 47h                 ; current folder of the default drive
        xor     dl, dl
        mov     si, cwdbuf
        int     21h
        mov     ah, 3Bh                 ; chdir to the root
        mov     dx, root
        int     21h
        mov     ah, 3Ah                 ; rmdir SUB
        mov     dx, subdir
        int     21h

        mov     ah, 4Eh                 ; find *.TMP
        xor     cx, cx
        mov     dx, pattern
        int     21h
        mov     ah, 4Fh                 ; find next: no more files
        int     21h
        mov     ah, 41h                 ; delete RENAMED.TMP
        mov     dx, newname
        int     21h
        mov     ah, 41h                 ; delete it again: file not found
        mov     dx, newname
        int     21h

        mov     ah, 40h                 ; "done" on standard output
        mov     bx, 1
        mov     cx, donelen
        mov     dx, done
        int     21h

        mov     [tailseg], cs
        mov     [fcbseg1], cs
        mov     [fcbseg2], cs
        mov     ax, 4B00h               ; run CHILD.COM " hi"
        mov     dx, child
        mov     bx, params
        int     21h
        mov     ah, 4Dh                 ; its exit code
        int     21h
        mov     ax, 4C07h
        int     21h

fname:      db "DATA.TMP", 0
newname:    db "RENAMED.TMP", 0
missing:    db "MISSING.DAT", 0
subdir:     db "SUB", 0
root:       db "\", 0
pattern:    db "*.TMP", 0
child:      db "CHILD.COM", 0
data:       db "0123456789ABCDEF"
done:       db "done", 13, 10
donelen     equ $ - done
fcb:        db 0, "DATA    TMP"
            times 25 db 0
tail:       db 3, " hi", 13
params:     dw 0                        ; environment: the parent's
            dw tail
tailseg:    dw 0
            dw fcb
fcbseg1:    dw 0
            dw fcb
fcbseg2:    dw 0
handle:     dw 0
buf:        times 16 db 0
cwdbuf:     times 64 db 0
            times 256 db 0
stack_top:
