// SPDX-License-Identifier: Apache-2.0
/*
 * Source of the ELF seeds of fuzz_tlsfind (`make fuzz-corpus`), linked as seed_elf.c is, so
 * that each file stays around 2 KiB. Without GO: a library with OpenSSL's read and write
 * calls (with BORING, BoringSSL's: no _ex calls, and the symbol that tells it apart). With GO:
 * a static executable whose .gopclntab, in Go 1.18's layout with the magic GO (0xfffffff0;
 * 0xfffffffa is Go 1.16's), names the three crypto/tls functions the finder probes, written
 * below in assembly with RET instructions where a Go function has them (and RETS more in
 * Read, to meet the limit of probes). Not a fuzz target.
 */
#ifndef GO

int SSL_read(void *ssl, void *buf, int num);
int SSL_write(void *ssl, const void *buf, int num);

int SSL_read(void *ssl, void *buf, int num)
{
	return ssl && buf ? num : -1;
}

int SSL_write(void *ssl, const void *buf, int num)
{
	return ssl && buf ? num : -2;
}

#ifdef BORING
int SSL_CTX_set_strict_cipher_list(void *ctx, const char *str);

int SSL_CTX_set_strict_cipher_list(void *ctx, const char *str)
{
	return ctx && str;
}
#else
int SSL_read_ex(void *ssl, void *buf, unsigned long num, unsigned long *readbytes);
int SSL_write_ex(void *ssl, const void *buf, unsigned long num, unsigned long *written);

int SSL_read_ex(void *ssl, void *buf, unsigned long num, unsigned long *readbytes)
{
	*readbytes = (unsigned long)SSL_read(ssl, buf, (int)num);
	return 1;
}

int SSL_write_ex(void *ssl, const void *buf, unsigned long num, unsigned long *written)
{
	*written = (unsigned long)SSL_write(ssl, buf, (int)num);
	return 1;
}
#endif

#else /* GO */

#define STR_(x) #x
#define STR(x) STR_(x)
#ifndef RETS
#define RETS 0
#endif

void _start(void);

/*
 * Go's register ABI: the receiver in rax, the goroutine in r14, a stack check first. Read
 * has two RETs, Write one, handshakeContext one after a call; int3 pads to 16 bytes as the Go
 * linker pads with it.
 */
/* clang-format off */
__asm__(".text\n"
	".balign 16\n"
	"go_text:\n"
	"go_read:\n"
	"	cmp 0x10(%r14), %rsp\n"
	"	jbe 1f\n"
	"	test %rax, %rax\n"
	"	je 2f\n"
	"	mov $1, %eax\n"
	"	ret\n"
	"2:	xor %eax, %eax\n"
	"	ret\n"
	".rept " STR(RETS) "\n" /* more, to reach the limit of probes */
	"	ret\n"
	".endr\n"
	"1:	jmp go_read\n"
	".balign 16, 0xcc\n"
	"go_write:\n"
	"	sub $0x18, %rsp\n"
	"	mov %rbx, 0x8(%rsp)\n"
	"	lea (%rax,%rbx), %rax\n"
	"	add $0x18, %rsp\n"
	"	ret\n"
	".balign 16, 0xcc\n"
	"go_hs:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	call go_write\n"
	"	pop %rbp\n"
	"	ret\n"
	".balign 16, 0xcc\n"
	"go_end:\n"
	"\n"
	/* runtime/symtab.go pcHeader, then the tables it places (offsets from its start). */
	".section .gopclntab, \"a\"\n"
	".balign 32\n"
	"pcln:\n"
	"	.long " STR(GO) "\n"
	"	.byte 0, 0, 1, 8\n"		    /* pad, pad, pc quantum, pointer size */
	"	.quad 3, 0\n"			    /* nfunc, nfiles */
	"	.quad go_text\n"		    /* textStart */
	"	.quad names - pcln\n"		    /* funcnameOffset */
	"	.quad tabs - pcln, tabs - pcln\n" /* cuOffset, filetabOffset */
	"	.quad tabs - pcln, functab - pcln\n" /* pctabOffset, pclnOffset */
	"names:\n"
	"n_read:	.asciz \"crypto/tls.(*Conn).Read\"\n"
	"n_write:	.asciz \"crypto/tls.(*Conn).Write\"\n"
	"n_hs:	.asciz \"crypto/tls.(*Conn).handshakeContext\"\n"
	"tabs:\n"
	".balign 4\n"
	/* functab: (entry offset, _func offset) per function, then the end of the text */
	"functab:\n"
	"	.long go_read - go_text, f_read - functab\n"
	"	.long go_write - go_text, f_write - functab\n"
	"	.long go_hs - go_text, f_hs - functab\n"
	"	.long go_end - go_text\n"
	/* _func: its entry offset, its name's offset; nothing the finder reads follows */
	"f_read:	.long go_read - go_text, n_read - names\n"
	"f_write:	.long go_write - go_text, n_write - names\n"
	"f_hs:	.long go_hs - go_text, n_hs - names\n"
	".text\n");
/* clang-format on */

void _start(void)
{
	for (;;)
		;
}

#endif
