/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests that write ELF files of their own (hostile tables, sparse sections): the file header
 * of a little-endian x86-64 ELF64 file of the given type, nothing else set.
 */
#ifndef ROVER_TESTS_ELF_HEADER_H
#define ROVER_TESTS_ELF_HEADER_H

#include <elf.h>
#include <string.h>

static inline void test_elf64_header(Elf64_Ehdr *eh, uint16_t type)
{
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
}

#endif
