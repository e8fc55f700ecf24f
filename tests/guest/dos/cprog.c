/* cprog.c -- a C program for the built-in DOS (pypc), built with bcc -Md
   (Debian's bcc and elks-libc).  Writes a file, reads it back, allocates
   memory and exits with 7 when everything matched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    FILE *f;
    char line[64];
    char *block;
    int i, ok = 1;

    printf("cprog: %d argument(s)", argc - 1);
    for (i = 1; i < argc; i++)
        printf(" [%s]", argv[i]);
    printf("\n");
    f = fopen("CDATA.TXT", "w");
    if (!f) { printf("cannot create\n"); return 1; }
    fprintf(f, "line %d\n", 42);
    fclose(f);
    f = fopen("CDATA.TXT", "r");
    if (!f) { printf("cannot open\n"); return 1; }
    if (!fgets(line, sizeof line, f)) ok = 0;
    fclose(f);
    if (strncmp(line, "line 42", 7) != 0) ok = 0;
    printf("read back: %s", line);
    block = malloc(20000);
    if (!block) ok = 0;
    else { memset(block, 0x5A, 20000); if (block[19999] != 0x5A) ok = 0; free(block); }
    printf("%s\n", ok ? "all good" : "mismatch");
    return ok ? 7 : 1;
}
