; conio.asm -- console, clock and system services of the built-in DOS
; (pypc): date and time from emulated time (AH=2Ah-2Dh), version (30h),
; vectors (25h/35h), break flag (33h), drives (19h/0Eh), INT 2Fh with
; nothing installed, INT 29h and CALL 5 output, then keyboard input typed
; by the test: "hello<Enter>" for AH=0Ah, "x" for AH=01h, "y" for AH=08h,
; "abc<Enter>" for AH=3Fh on handle 0.  Prints "ok"/"FAIL" lines and exits
; with the number of failures.
;
; nasm -f bin -o conio.com conio.asm

        cpu     8086
        org     100h

%include "dosmacros.inc"

start:
        ; -- date and time: the DOS starts on 1 January 1990 at midnight ----
        mov     ah, 2Ah
        int     21h
        expect  cx, 1990, "year 1990"
        expect  dx, 0101h, "1 January"
        expect  al, 1, "a Monday"
        mov     ah, 2Ch
        int     21h
        expect  cx, 0, "00:00"
        mov     cx, 2001
        mov     dx, 0203h
        mov     ah, 2Bh
        int     21h
        expect  al, 0, "set date"
        mov     ah, 2Ah
        int     21h
        expect  cx, 2001, "new year"
        expect  dx, 0203h, "new month and day"
        expect  al, 6, "a Saturday"
        mov     cx, 2001
        mov     dx, 021Eh                       ; 30 February
        mov     ah, 2Bh
        int     21h
        expect  al, 0FFh, "an invalid date is refused"
        mov     cx, 0C22h                       ; 12:34
        mov     dx, 3800h                       ; 56.00 s
        mov     ah, 2Dh
        int     21h
        expect  al, 0, "set time"
        mov     ah, 2Ch
        int     21h
        expect  cx, 0C22h, "hours and minutes"
        expect  dh, 38h, "seconds"
        mov     cx, 1900h                       ; 25:00
        mov     ah, 2Dh
        int     21h
        expect  al, 0FFh, "an invalid time is refused"

        ; -- version, vectors, break flag, drives, INT 2Fh ----------------
        mov     ah, 30h
        int     21h
        expect  ax, 1E03h, "version 3.30"
        mov     dx, 5678h
        mov     ax, 1234h
        push    ds
        mov     ds, ax
        mov     ax, 2560h
        int     21h
        pop     ds
        mov     ax, 3560h
        int     21h
        expect  bx, 5678h, "vector offset"
        mov     ax, es
        expect  ax, 1234h, "vector segment"
        push    ds
        pop     es
        mov     ax, 3301h
        mov     dl, 1
        int     21h
        mov     ax, 3300h
        int     21h
        expect  dl, 1, "break flag"
        mov     ah, 19h
        int     21h
        expect  al, 2, "current drive C:"
        mov     ah, 0Eh
        mov     dl, 2
        int     21h
        cmp     al, 5
        fail_if jb, "at least 5 drives"
        mov     ax, 1600h
        int     2Fh
        expect  ax, 1600h, "INT 2Fh: nothing installed"
        mov     al, '#'
        int     29h
        mov     cl, 2
        mov     dl, '!'
        call    5
        mov     dx, crlf
        call    print

        ; -- keyboard ------------------------------------------------------------
        mov     ah, 06h
        mov     dl, 0FFh
        int     21h
        fail_if jnz, "no key yet"
        mov     ah, 0Bh
        int     21h
        expect  al, 0, "no key waiting"
        mov     ah, 0Ah
        mov     dx, linebuf
        int     21h
        expect  byte [linebuf + 1], 5, "line length"
        mov     si, linebuf + 2
        mov     di, hello
        mov     cx, 6
        repe    cmpsb
        fail_if jne, "line text"
        mov     ah, 01h
        int     21h
        expect  al, 'x', "read with echo"
        mov     ah, 08h
        int     21h
        expect  al, 'y', "read without echo"
        mov     ah, 3Fh
        xor     bx, bx
        mov     cx, 80
        mov     dx, buf
        int     21h
        expect  ax, 5, "read a line from handle 0"
        mov     si, buf
        mov     di, abc
        mov     cx, 5
        repe    cmpsb
        fail_if jne, "handle 0 line text"

        mov     al, [failures]
        mov     ah, 4Ch
        int     21h

%include "dosio.inc"

failures:   db 0
crlf:       db 13, 10, "$"
hello:      db "hello", 13
abc:        db "abc", 13, 10
linebuf:    db 20, 0
            times 21 db 0
buf:        times 80 db 0
