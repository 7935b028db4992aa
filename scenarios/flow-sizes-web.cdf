# Flow sizes for squall's examples: a heavy-tailed mix made up for squall
# (most flows small, most bytes in a few large ones), written in the
# "SIZE CDF" format of the web-search and data-mining flow-size CDFs
# (pFabric, HPCC's and Homa's traffic generators); not one of those files.
# Sizes in bytes; the CDF is linear between points. Mean 309 140 B.
# size (bytes)  share of flows no larger
100             0
1000            0.30
5000            0.50
20000           0.65
100000          0.80
500000          0.90
2000000         0.97
10000000        1
