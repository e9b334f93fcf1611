/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks and the
   Go runtime (>= 1.24) needs for ProcessPrng. Test infrastructure only. */
#include <windows.h>
#include <bcrypt.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE p, SIZE_T n) {
    while (n > 0) {
        ULONG k = n > 0x10000000 ? 0x10000000 : (ULONG)n;
        if (BCryptGenRandom(NULL, p, k, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) return FALSE;
        p += k; n -= k;
    }
    return TRUE;
}
