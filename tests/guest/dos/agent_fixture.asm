; agent_fixture.asm -- the debugger fixture of the agent RPC spec (section 10),
; written for pypc from the spec's description.
;
; A .COM program (PSP at CS:0000, entry CS:0100h) whose first instructions a
; debugger steps through:
;   0100h  mov ax, 1234h          one step  -> AX = 1234h, IP = 0103h
;   0103h  mov bx, 5678h
;   0106h  mov si, 0200h          an execution breakpoint here stops here
;   0109h  mov byte [si], 41h
;   010Ch  mov word [si+1], 4243h five steps -> DS:0200h = 41h 43h 42h
;   0111h  nop
;   0112h  int 20h                back to DOS, exit code 0
;
; nasm -f bin -o agent_fixture.com agent_fixture.asm

        cpu     8086
        org     100h

start:
        mov     ax, 0x1234
        mov     bx, 0x5678
        mov     si, 0x0200
        mov     byte [si], 0x41
        mov     word [si + 1], 0x4243
        nop
        int     0x20
