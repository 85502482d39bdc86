/*
 * The printing macros of the ABI probes (`abi_probe.c`, `xla_abi_probe.c`): each prints one
 * line, `NAME VALUE`, where NAME has no spaces, read by `c_probe/mod.rs`.
 *
 *   PROBE_TYPE(T)          sizeof(T) and alignof(T)
 *   PROBE_FIELD(T, field)  offsetof(T.field) and sizeof(T.field)
 *   PROBE_ENUMERATOR(name) the value of an enumerator (or any signed integer constant)
 *   PROBE_MACRO(name)      the value of an unsigned integer macro
 */
#ifndef DLBRIDGE_C_PROBE_H
#define DLBRIDGE_C_PROBE_H

#include <stddef.h>
#include <stdio.h>

#define PROBE_TYPE(T)                                                  \
  printf("sizeof(%s) %zu\n", #T, sizeof(T));                           \
  printf("alignof(%s) %zu\n", #T, (size_t)_Alignof(T))

#define PROBE_FIELD(T, field)                                          \
  printf("offsetof(%s.%s) %zu\n", #T, #field, offsetof(T, field));     \
  printf("sizeof(%s.%s) %zu\n", #T, #field, sizeof(((T *)0)->field))

#define PROBE_ENUMERATOR(name) printf("%s %lld\n", #name, (long long)(name))

#define PROBE_MACRO(name) printf("%s %llu\n", #name, (unsigned long long)(name))

#endif
