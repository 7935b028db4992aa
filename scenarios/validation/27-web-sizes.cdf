# Flow sizes of validation case 27 (27-open-loop.toml gives these points
# inline; squall-validate's tests check that they are this file's).
# Shaped like the web-search workload of the DCTCP paper (Alizadeh et al.,
# SIGCOMM 2010, §2.2 and fig. 4: most flows are small, most bytes are in
# flows of hundreds of KB to MB), scaled down to run in seconds: our own
# points, not the paper's data. Linear between points; mean 279 200 B.
# size (bytes)  share of flows no larger
2000            0
10000           0.2
30000           0.35
100000          0.55
300000          0.75
1000000         0.93
2000000         1
